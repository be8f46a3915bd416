"""LayerNorm one sample at a time: each of the batch's 16 rows (4M elements
each) gets its own nn.LayerNorm call, which runs it on one block, one call
after another, and the rows are stacked after. Correct, and about the batch
size times slower than one call over all rows, whose 16 blocks run side by
side. (Unfusing the steps into torch ops is not slow here: PyTorch's own
layer_norm over rows this long is far from the roof, and the unfused ops
reduce over the whole grid.)"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return torch.stack([self.ln(x[i]) for i in range(x.shape[0])])
