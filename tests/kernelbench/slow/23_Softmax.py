"""Softmax over dim 1 written out in torch ops: a row maximum, a subtraction,
an exponential, a row sum and a division, each its own pass over the data:
correct, and several times the traffic of one fused softmax."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
