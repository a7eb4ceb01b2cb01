def pytest_configure(config):
    config.addinivalue_line("markers", "shapes_disagree: the test emits a model whose declared shapes are wrong on "
                                       "purpose (tests.shapes.plugin does not check it)")
