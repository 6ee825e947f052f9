"""A cell's record: the fields of its result.json (schema) and the one check that decides
whether a job keeps it and aggregation counts it (verify). Below both train/ and results/."""
