"""The library's version, in a module of its own so any layer can read it without importing the
package root (which sits above every layer)."""

from __future__ import annotations

__version__ = "0.1.0"
