"""Shared test settings.

The tests run tiny models, where handing work to a second thread costs more than it saves
(20-50x slower on a busy two-core machine), so the whole suite runs torch on one thread.
"""

import torch

torch.set_num_threads(1)
