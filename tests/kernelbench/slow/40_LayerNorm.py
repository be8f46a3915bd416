"""LayerNorm over the last three dimensions written out in torch ops: a
mean, a variance, a normalization and the affine step, each its own pass
over the data (and a copy): correct, and several times the traffic."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        dims = tuple(range(x.dim() - len(self.ln.normalized_shape), x.dim()))
        mean = x.mean(dim=dims, keepdim=True)
        xc = x - mean
        var = (xc * xc).mean(dim=dims, keepdim=True)
        y = xc / torch.sqrt(var + self.ln.eps)
        return y * self.ln.weight + self.ln.bias
