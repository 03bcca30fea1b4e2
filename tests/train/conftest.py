"""The `slow` mark: tests of tens of seconds (torch.compile builds C++ kernels); deselect with -m "not slow"."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes tens of seconds (deselect with -m 'not slow')")
