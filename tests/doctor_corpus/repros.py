"""Cases from pytorch/pytorch test/dynamo/test_repros.py (ReproTests; later split into
test/dynamo/_repros_part*.py). The model code (detectron2 excerpts) is the
test file's own.

Tried and left out (no break on torch 2.13): test_reformer_train (an autograd.Function
taking a list of layers).
"""

import torch
import torch._dynamo
from copy import deepcopy

from torch.nn import functional as F

from . import case

T = "test/dynamo/test_repros.py::ReproTests::"


def _do_paste_mask(masks, boxes, img_h: int, img_w: int, skip_empty: bool = True):
    # from detectron2 mask_ops.py

    device = masks.device

    if skip_empty and not torch.jit.is_scripting():
        x0_int, y0_int = torch.clamp(boxes.min(dim=0).values.floor()[:2] - 1, min=0).to(  # BREAK
            dtype=torch.int32
        )
        x1_int = torch.clamp(boxes[:, 2].max().ceil() + 1, max=img_w).to(
            dtype=torch.int32
        )
        y1_int = torch.clamp(boxes[:, 3].max().ceil() + 1, max=img_h).to(
            dtype=torch.int32
        )
    else:
        x0_int, y0_int = 0, 0
        x1_int, y1_int = img_w, img_h
    x0, y0, x1, y1 = torch.split(boxes, 1, dim=1)  # each is Nx1

    N = masks.shape[0]

    img_y = torch.arange(y0_int, y1_int, device=device, dtype=torch.float32) + 0.5  # BREAK
    img_x = torch.arange(x0_int, x1_int, device=device, dtype=torch.float32) + 0.5
    img_y = (img_y - y0) / (y1 - y0) * 2 - 1
    img_x = (img_x - x0) / (x1 - x0) * 2 - 1
    # img_x, img_y have shapes (N, w), (N, h)

    gx = img_x[:, None, :].expand(N, img_y.size(1), img_x.size(1))
    gy = img_y[:, :, None].expand(N, img_y.size(1), img_x.size(1))
    grid = torch.stack([gx, gy], dim=3)

    if not torch.jit.is_scripting():
        if not masks.dtype.is_floating_point:
            masks = masks.float()
    img_masks = F.grid_sample(masks, grid.to(masks.dtype), align_corners=False)

    if skip_empty and not torch.jit.is_scripting():
        return img_masks[:, 0], (slice(y0_int, y1_int), slice(x0_int, x1_int))
    else:
        return img_masks[:, 0], ()


def cat(tensors, dim=0):
    # from detectron2 wrappers.py
    assert isinstance(tensors, (list, tuple))
    if len(tensors) == 1:
        return tensors[0]
    return torch.cat(tensors, dim)


def shapes_to_tensor(x, device=None):
    # from detectron2 wrappers.py
    if torch.jit.is_scripting():
        return torch.as_tensor(x, device=device)
    if torch.jit.is_tracing():
        assert all(
            [isinstance(t, torch.Tensor) for t in x]
        ), "Shape should be tensor during tracing!"
        # as_tensor should not be used in tracing because it records a constant
        ret = torch.stack(x)
        if ret.device != device:  # avoid recording a hard-coded device if not necessary
            ret = ret.to(device=device)
        return ret
    return torch.as_tensor(x, device=device)


class Boxes:
    # from detectron2 poolers.py
    def __init__(self, tensor: torch.Tensor):
        device = (
            tensor.device if isinstance(tensor, torch.Tensor) else torch.device("cpu")
        )
        tensor = torch.as_tensor(tensor, dtype=torch.float32, device=device)
        if tensor.numel() == 0:
            tensor = tensor.reshape((-1, 4)).to(dtype=torch.float32, device=device)
        assert tensor.dim() == 2 and tensor.size(-1) == 4, tensor.size()
        self.tensor = tensor

    def __len__(self) -> int:
        return self.tensor.shape[0]

    @property
    def device(self):
        return self.tensor.device


def convert_boxes_to_pooler_format(box_lists):
    # from detectron2 structures.py
    boxes = torch.cat([x.tensor for x in box_lists], dim=0)
    # __len__ returns Tensor in tracing.
    sizes = shapes_to_tensor([x.__len__() for x in box_lists], device=boxes.device)
    indices = torch.repeat_interleave(  # BREAK
        torch.arange(len(box_lists), dtype=boxes.dtype, device=boxes.device), sizes
    )
    return cat([indices[:, None], boxes], dim=1)


class FakeMamlInner(torch.nn.Module):
    def __init__(self):
        super(FakeMamlInner, self).__init__()
        self.linear = torch.nn.Linear(784, 5)

    def forward(self, x, ignored=None, bn_training=False):
        return self.linear(x.view(x.shape[0], -1))


class PartialMaml(torch.nn.Module):
    # Highly simplified version of maml.meta.Meta.finetuning
    def __init__(self):
        super(PartialMaml, self).__init__()
        self.net = FakeMamlInner()
        self.update_step_test = 10
        self.update_lr = 0.4

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        querysz = x_qry.size(0)

        corrects = [0 for _ in range(self.update_step_test + 1)]

        # in order to not ruin the state of running_mean/variance and bn_weight/bias
        # we finetunning on the copied model instead of self.net
        net = deepcopy(self.net)  # BREAK

        # 1. run the i-th task and compute loss for k=0
        logits = net(x_spt)
        loss = F.cross_entropy(logits, y_spt)
        grad = torch.autograd.grad(loss, net.parameters())  # BREAK
        fast_weights = list(
            map(lambda p: p[1] - self.update_lr * p[0], zip(grad, net.parameters()))
        )

        # this is the loss and accuracy before first update
        with torch.no_grad():
            # [setsz, nway]
            logits_q = net(x_qry, net.parameters(), bn_training=True)
            # [setsz]
            pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
            # scalar
            correct = torch.eq(pred_q, y_qry).sum().item()  # BREAK
            corrects[0] = corrects[0] + correct

        # this is the loss and accuracy after the first update
        with torch.no_grad():
            # [setsz, nway]
            logits_q = net(x_qry, fast_weights, bn_training=True)
            # [setsz]
            pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
            # scalar
            correct = torch.eq(pred_q, y_qry).sum().item()  # BREAK
            corrects[1] = corrects[1] + correct

        del net

        accs = torch.tensor(corrects) / querysz

        return accs


@case(T + "test_maml_no_item_capture", config={"capture_scalar_outputs": False}, note="3 calls (the test makes 10)")
def maml_no_item_capture():
    a = torch.randn(5, 1, 28, 28)
    b = torch.zeros(5, dtype=torch.int64)
    c = torch.randn(75, 1, 28, 28)
    d = torch.zeros(75, dtype=torch.int64)
    return PartialMaml(), [(a, b, c, d)] * 3


@case(T + "test_slicing_dynamic_shape_setitem", backend="aot_eager")
def slicing_dynamic_shape_setitem():
    def fn(input_lengths: torch.Tensor, new_ones_1):
        getitem_13 = input_lengths[3]
        new_ones_1[(3, slice(getitem_13, None, None))] = 0  # BREAK
        setitem_13 = new_ones_1
        return (setitem_13,)

    return fn, [lambda f: f(torch.arange(10), torch.ones(10, 204))]


@case(T + "test_do_paste_mask")
def do_paste_mask():
    return _do_paste_mask, [
        (torch.randn(1, 1, 28, 28), torch.tensor([[0.0, 1, 2, 4]]) * 1, 427, 640, True),
        (torch.randn(1, 1, 28, 28), torch.tensor([[0.0, 1, 2, 4]]) * 2, 427, 640, True),
        (torch.randn(1, 1, 28, 28), torch.tensor([[0.0, 1, 2, 4]]) * 3, 612, 612, True),
        (torch.randn(1, 1, 28, 28), torch.tensor([[0.0, 1, 2, 4]]) * 4, 612, 612, True),
        (torch.randn(1, 1, 28, 28), torch.tensor([[0.0, 1, 2, 4]]) * 2, 427, 640, False),
    ]


@case(T + "test_convert_boxes_to_pooler_format")
def boxes_to_pooler_format():
    boxes1 = [
        Boxes(torch.arange(0, 8).reshape((2, 4))),
        Boxes(torch.arange(8, 16).reshape((2, 4))),
    ]
    boxes2 = [
        Boxes(torch.arange(16, 20).reshape((1, 4))),
        Boxes(torch.arange(20, 24).reshape((1, 4))),
    ]
    return convert_boxes_to_pooler_format, [(boxes1,), (boxes2,)]


@case(T + "test_slicing_dynamic_shape")
def slicing_dynamic_shape():
    def fn(y):
        x = torch.ones(8)
        idx = y[0]
        out = x[idx:]  # BREAK
        return (out + 3) * 5

    return fn, [(torch.ones(10, dtype=torch.long),), (torch.tensor([4]),)]


@case(T + "test_rng_state")
def rng_state():
    def fn():
        state = torch.get_rng_state()  # BREAK
        before = torch.rand(1000)
        torch.set_rng_state(state)  # BREAK
        after = torch.rand(1000)
        return before, after

    return fn, [()]
