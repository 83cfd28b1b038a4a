"""``kbgen run COMMAND``: ``command`` runs it with its output passing through and a bounded part
kept, ``stop`` passes a stop signal on and waits for the command's own exit, and ``errorfile``
reads the error file a torchrun child leaves as untrusted input. The command itself is in
:mod:`kbgen.cli.run`."""
