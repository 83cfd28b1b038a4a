"""The fleet: probe reports from many nodes, stored per node, compared for drift.

``engines`` runs ``kbgen probe --json`` on every node through the scheduler a team already has
(Slurm, Ray, ssh), and ``ship`` sends the probe runner to nodes that have no kbgen; ``model`` is
what is kept per node and ``store`` keeps it, one file per node under ``kb/fleet/``; ``facts``
takes each node's key facts and compares those that should agree across nodes, marking the
outliers. The Fleet pages of the site are made in :mod:`kbgen.site.fleet`.
"""
