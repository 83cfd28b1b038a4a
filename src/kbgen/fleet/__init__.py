"""The fleet: probe reports from many nodes, stored per node, compared for drift.

``engines`` runs ``kbgen probe --json`` on every node through the scheduler a team already has
(Slurm, Ray, ssh); ``store`` keeps one file per node under ``kb/fleet/``; ``drift`` compares the
facts that should agree across nodes and marks the outliers.
"""
