"""Metastores: where a catalog records its databases and tables (`metastore` option)."""
