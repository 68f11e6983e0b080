"""Hooks of the lakeformat provider."""

from lakeformat_airflow.hooks.lakeformat import ConnectionConfigError, LakeformatHook

__all__ = ["ConnectionConfigError", "LakeformatHook"]
