"""Sensors of the lakeformat provider."""

from lakeformat_airflow.sensors.snapshot import LakeformatSnapshotSensor

__all__ = ["LakeformatSnapshotSensor"]
