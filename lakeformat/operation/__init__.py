"""What can be done to a table, one sub-package per kind of work, each with a front door
(its `__init__` names what the rest of the library may use):

* `write/` — writing rows, schema evolution on write, bucket assignment, delete-by-predicate;
* `compact/` — compaction of primary-key and append tables;
* `maintain/` — snapshot, partition, schema-file and orphan-file cleanup, tags, rollback;
* `read/` — reading rows and metadata, snapshot deltas and the snapshot watch;
* `commit/` — the commit protocol and `DataJob`, the driver every data job runs on.

The modules here are what all of them stand on: `paths` (data and index file names), `scan`
(the live files of a snapshot), `runner` (where a job's execute step runs: threads here, Spark
tasks in `lakeformat.spark`) and `support` (the table options and layouts each operation
refuses). The LSM runtime and the filter language sit one layer below, in `lakeformat.mergetree`
and `lakeformat.expressions`.
"""
