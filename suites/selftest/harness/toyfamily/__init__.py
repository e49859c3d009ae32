"""A toy broker family, used only by the tests: a new family is one package of its own that
registers itself (``family.FAMILY``, found through the ``hourglass.families`` entry point group)
and touches no file of Hourglass. Its broker is in memory: the simulator's, without timer messages,
under an adapter name and a capabilities rule of its own."""
