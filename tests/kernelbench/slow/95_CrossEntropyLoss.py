"""Cross entropy computed in fp64 (an accuracy reflex): correct, and the
H200's fp64 rate and twice the bytes make it slow."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        logp = torch.log_softmax(predictions.double(), dim=1)
        return (-logp.gather(1, targets[:, None]).mean()).float()
