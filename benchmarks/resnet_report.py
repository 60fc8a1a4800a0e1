"""A real ResNet-18 training step compiled with Inductor on this machine, as a report.

``transformers``' ResNet (the ResNet-18 layout: basic blocks, depths 2-2-2-2, widths
64-128-256-512; random weights, nothing downloaded), one SGD step on a batch of 8
224x224 images, through ``ipycompile.run_cell``. Used by ``render.py`` for the size of
a large real report's notebook output. Run alone to write the report JSON::

    python benchmarks/resnet_report.py OUT.json
"""

from __future__ import annotations

import sys


def resnet18_training_report(batch: int = 8, runs: int = 3):
    import torch
    from transformers import ResNetConfig, ResNetForImageClassification

    import ipycompile

    torch.manual_seed(0)
    config = ResNetConfig(layer_type="basic", depths=[2, 2, 2, 2], hidden_sizes=[64, 128, 256, 512],
                          embedding_size=64, num_labels=10)
    model = ResNetForImageClassification(config).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, 3, 224, 224), torch.randint(0, 10, (batch,))

    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(pixel_values=x).logits, y)
        loss.backward()
        return loss

    run = ipycompile.run_cell("loss = step(x, y)\nopt.step()\nopt.zero_grad()\nloss",
                              {"step": step, "x": x, "y": y, "opt": opt}, runs=runs, warmup=1, label="resnet18-train")
    return run.report


if __name__ == "__main__":
    r = resnet18_training_report()
    r.save(sys.argv[1] if len(sys.argv) > 1 else "resnet18_report.json")
    print(repr(r))
