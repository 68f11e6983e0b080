"""lakeformat's tests (see README.md here): a package so shared helpers import as
`tests.support.<module>` under any pytest import mode."""
