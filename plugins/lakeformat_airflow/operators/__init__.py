"""Operators of the lakeformat provider: one library call each, the result's dict for XCom."""

from lakeformat_airflow.operators.backfill import LakeformatBackfillOperator
from lakeformat_airflow.operators.base import LakeformatBaseOperator
from lakeformat_airflow.operators.catalog import LakeformatListTablesOperator
from lakeformat_airflow.operators.compact import LakeformatCompactOperator
from lakeformat_airflow.operators.due import (
    LakeformatDueActionsOperator,
    LakeformatRunDueActionsOperator,
)
from lakeformat_airflow.operators.maintenance import (
    LakeformatCleanSchemasOperator,
    LakeformatExpirePartitionsOperator,
    LakeformatExpireSnapshotsOperator,
    LakeformatRemoveOrphanFilesOperator,
)
from lakeformat_airflow.operators.tags import (
    LakeformatCreateTagOperator,
    LakeformatExpireTagsOperator,
    LakeformatRollbackOperator,
)
from lakeformat_airflow.operators.write import (
    LakeformatAlterTableOperator,
    LakeformatCreateTableOperator,
    LakeformatIngestOperator,
)

__all__ = [
    "LakeformatAlterTableOperator", "LakeformatBackfillOperator", "LakeformatBaseOperator",
    "LakeformatCleanSchemasOperator",
    "LakeformatCompactOperator", "LakeformatCreateTableOperator", "LakeformatCreateTagOperator",
    "LakeformatDueActionsOperator",
    "LakeformatExpirePartitionsOperator", "LakeformatExpireSnapshotsOperator",
    "LakeformatExpireTagsOperator",
    "LakeformatIngestOperator", "LakeformatListTablesOperator",
    "LakeformatRemoveOrphanFilesOperator",
    "LakeformatRollbackOperator", "LakeformatRunDueActionsOperator",
]
