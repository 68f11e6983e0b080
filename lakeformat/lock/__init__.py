"""Table locks: Paimon's commit lock (`lock.enabled`) and lakeformat's maintenance lock, as a
lease object on the warehouse's storage (`lock.type=s3`) or rows of Paimon's JDBC lock table
(`lock.type=jdbc`). See `lock/base.py` for the model."""
