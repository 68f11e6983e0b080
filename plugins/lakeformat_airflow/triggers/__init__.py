"""Triggers of the lakeformat provider (they run in Airflow's triggerer)."""

from lakeformat_airflow.triggers.debt import LakeformatDebtTrigger
from lakeformat_airflow.triggers.snapshot import LakeformatSnapshotTrigger

__all__ = ["LakeformatDebtTrigger", "LakeformatSnapshotTrigger"]
