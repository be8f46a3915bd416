"""A @ B with K = 32 as a sum of 32 outer products, one pass over the
32768 x 32768 output each: correct, and 32 times the output traffic."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        C = torch.zeros(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        for k in range(A.shape[1]):
            C.addr_(A[:, k], B[k, :])
        return C
