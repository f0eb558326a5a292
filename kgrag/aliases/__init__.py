"""Alias administration: curate which names mean the same entity, effective at once.

``service`` holds the operations and their policy, ``linking`` links existing chunks to a new
alias in place, ``glossary_io`` imports/exports glossary files, ``suggest`` proposes
duplicates, ``views`` lists and shows, ``cli`` is ``kgrag aliases``. The package imports
nothing itself, so registering the CLI group keeps every ``kgrag`` command quick to start.
"""
