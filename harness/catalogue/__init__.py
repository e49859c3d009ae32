"""The scenario catalogues, shipped with the package so ``--suite`` and the pytest plugin work
outside a checkout: ``conformance`` (every rule of the model), ``chaos`` (faults: ``SHORT`` and
``NIGHTLY``) and ``generate`` (hypothesis strategies and the seeded ``sample`` of the nightly job).
The test modules that run them stay in ``suites/``."""
