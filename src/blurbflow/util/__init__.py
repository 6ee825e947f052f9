"""Small helpers every stage shares: paths, atomic writes, digests, errors, file records and
provenance."""
