"""Aggregate functions (Paimon's FieldAggregator family), one module per family; `registry`
creates them by name."""
