"""The bug lifecycle: a new bug (``create``, its id from ``ids``, its body from ``body``), the
changes a person makes (``edit``), probe results written in (``fill``), ``renumber`` and the old
copies an interrupted one leaves (``leftovers``), and ``roundtrip``, the one writer of record
files. Nothing is imported here, so loading a bug (``kbgen.store``) pulls in only ``leftovers``."""
