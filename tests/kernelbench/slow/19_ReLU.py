"""ReLU written as (x + |x|) / 2 in torch ops: an absolute value, an add and
a scale, each its own pass over the data: correct (exact in floating
point), and several times the traffic of one fused pass."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x + torch.abs(x)) * 0.5
