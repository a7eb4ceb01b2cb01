"""Tools on top of the compiler: the command line (``cli``, ``opt_tool``),
the demos (``demo``, ``demo_pymc``), the browser path (``web``,
``website``, ``web_assets/``) and the differential fuzzer (``fuzz/``).
Nothing on the compile path imports them."""
