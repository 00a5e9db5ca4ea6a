"""Slurm clusters as a source of nodes, through pilot jobs.

A pilot is a Slurm batch job that runs `nvq_runner serve` on a compute node; the
daemon reaches that runner through the cluster's login node with `srun --overlap`,
so nothing connects inward. Pure parts: `config` (the `[[clusters]]` tables),
`slurm` (command lines, the pilot script and parsing Slurm's answers), `scaling`
(when to request and release pilots, which jobs fit a pilot's time). The one part
with I/O is `login` (commands and runner channels over the login node's SSH
connection).
"""
