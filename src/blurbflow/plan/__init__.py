"""`snakemake plan`: what is still to run and what it will cost, before a launch. `remaining`
finds the seeds still to train (a job's manifest and its seeds' result.json, cheaply),
`calibrate` turns finished cells' wall times into seconds per seed, and `estimate` adds them
up per study and model, in GPU-hours and SLURM queue entries, and prints the table."""
