import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny matmuls: thread hand-offs cost more than they save (20-50x slower on a busy 2-core box)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
