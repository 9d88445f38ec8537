# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # for `import reference`

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden")


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


HAVE_TORCH_CUDA = _torch_cuda()


def pytest_report_header(config):
    import moeroute
    return "moeroute %s, library %s (%s), CUDA devices: %d" % (
        moeroute.version(), moeroute.library_path, moeroute.build_info(), moeroute.cuda_device_count())


@pytest.fixture
def rng():
    import numpy as np
    return np.random.default_rng(1234)
