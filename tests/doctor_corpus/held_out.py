"""The held-out part (issue 40, part 3): families the doctor was never tuned on, to measure it as a new
user would meet it. Nothing in ``ipycompile`` was changed for these cases; the suite does not run them
(``benchmarks/doctor_coverage.py --part held_out`` does, and writes its own JSON).

Two families:

* **libraries called as their users call them**: torch_geometric, kornia, torchmetrics, einops,
  torchdiffeq, gpytorch and e3nn (installed by ``pip install -e .[corpus]``; a case whose library is
  missing is skipped with the reason): their own modules and functions, in training steps and
  inference loops, on inputs of several sizes, the way each library's documentation or README shows
  them. Each case names the page its usage comes from. torchvision is not among them: no CPU build of
  torchvision 0.28 (the release for torch 2.13) is served by the registry this project uses, and
  PyPI's build needs torch's CUDA libraries (the real-code part keeps torchvision's ops written out);
* **questions people asked** in forum threads, blog posts, the PyTorch documentation's own examples and
  the libraries' issue trackers, their code transcribed as the poster wrote it (made to run on CPU: a
  ``device="cuda"`` dropped), each case naming its address.

CPU, ``backend="eager"``; each case really breaks or recompiles under torch 2.13 (the harness reads
torch's own counts).
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import case

PYG = "https://pytorch-geometric.readthedocs.io/en/latest/"
KORNIA = "https://kornia.readthedocs.io/en/latest/"
TM = "https://lightning.ai/docs/torchmetrics/stable/"
EINOPS = "https://einops.rocks/"
TDE = "https://github.com/rtqichen/torchdiffeq"
GPY = "https://docs.gpytorch.ai/en/stable/"
E3NN = "https://docs.e3nn.org/en/stable/"
DISCUSS = "https://discuss.pytorch.org/t/"
PYG_REQ = ("torch_geometric",)


def _graph(n: int, e: int, f: int = 8):
    return torch.randn(n, f), torch.randint(0, n, (2, e))


def _batch_vec(*sizes: int) -> torch.Tensor:
    return torch.cat([torch.full((s,), i, dtype=torch.long) for i, s in enumerate(sizes)])


# -- torch_geometric -------------------------------------------------------------------------------
@case(PYG + "generated/torch_geometric.nn.conv.GCNConv.html (GCNConv on graphs of several sizes)", requires=PYG_REQ)
def pyg_gcn_conv_graphs_of_several_sizes():
    from torch_geometric.nn import GCNConv

    conv = GCNConv(8, 16)
    return conv, [_graph(10, 30), _graph(12, 40), _graph(15, 50)]


@case(PYG + "generated/torch_geometric.nn.conv.GATConv.html (GATConv, two heads, inference)", requires=PYG_REQ)
def pyg_gat_conv_inference():
    from torch_geometric.nn import GATConv

    conv = GATConv(8, 8, heads=2).eval()

    def infer(m, x, edge_index):
        with torch.no_grad():
            return m(x, edge_index)

    return conv, [lambda m, g=g: infer(m, *g) for g in (_graph(10, 30), _graph(14, 44))]


@case(PYG + "generated/torch_geometric.nn.conv.SAGEConv.html (SAGEConv, mini-batches of neighbourhoods of several sizes)",
      requires=PYG_REQ)
def pyg_sage_conv_minibatches():
    from torch_geometric.nn import SAGEConv

    conv = SAGEConv(8, 8)
    return conv, [_graph(10, 30), _graph(12, 40), _graph(17, 60)]


@case(PYG + "generated/torch_geometric.nn.pool.global_mean_pool.html (graph-level readout of a batch of graphs)",
      requires=PYG_REQ)
def pyg_global_mean_pool_readout():
    from torch_geometric.nn import global_mean_pool

    def readout(x, batch):
        return global_mean_pool(x, batch)

    return readout, [(torch.randn(10, 8), _batch_vec(4, 6)), (torch.randn(12, 8), _batch_vec(4, 6, 2))]


@case(PYG + "generated/torch_geometric.utils.to_dense_batch.html (to_dense_batch before a transformer over nodes)",
      requires=PYG_REQ)
def pyg_to_dense_batch():
    from torch_geometric.utils import to_dense_batch

    def dense(x, batch):
        out, mask = to_dense_batch(x, batch)
        return out.sum(1) / mask.sum(1, keepdim=True)

    return dense, [(torch.randn(10, 8), _batch_vec(4, 6))]


@case(PYG + "generated/torch_geometric.utils.dropout_edge.html (dropout_edge in a training forward)", requires=PYG_REQ)
def pyg_dropout_edge_training():
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import dropout_edge

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = GCNConv(8, 4)

        def forward(self, x, edge_index):
            edge_index, _ = dropout_edge(edge_index, p=0.2, training=self.training)
            return self.conv(x, edge_index)

    return Net(), [_graph(10, 30)]


@case(PYG + "get_started/introduction.html (the GCN of the introduction, a training step per batch of graphs)",
      requires=PYG_REQ)
def pyg_intro_gcn_training_steps():
    from torch_geometric.nn import GCNConv, global_mean_pool

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(8, 16)
            self.conv2 = GCNConv(16, 3)

        def forward(self, x, edge_index, batch):
            x = self.conv1(x, edge_index)
            x = F.relu(x)
            x = F.dropout(x, training=self.training)
            x = self.conv2(x, edge_index)
            return global_mean_pool(x, batch)

    model = GCN()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    def step(m, n, e, sizes):
        x, edge_index = _graph(n, e)
        y = torch.randint(0, 3, (len(sizes),))
        optimizer.zero_grad()
        out = m(x, edge_index, _batch_vec(*sizes))
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return model, [lambda m: step(m, 10, 30, (4, 6)), lambda m: step(m, 13, 40, (5, 4, 4))]


@case(PYG + "tutorial/create_gnn.html (the tutorial's own GCNConv written with MessagePassing)", requires=PYG_REQ)
def pyg_tutorial_message_passing_gcn():
    from torch_geometric.nn import MessagePassing
    from torch_geometric.utils import add_self_loops, degree

    class GCNConv(MessagePassing):
        def __init__(self, in_channels, out_channels):
            super().__init__(aggr='add')  # "Add" aggregation (Step 5).
            self.lin = nn.Linear(in_channels, out_channels, bias=False)
            self.bias = nn.Parameter(torch.empty(out_channels))
            self.reset_parameters()

        def reset_parameters(self):
            self.lin.reset_parameters()
            self.bias.data.zero_()

        def forward(self, x, edge_index):
            # Step 1: Add self-loops to the adjacency matrix.
            edge_index, _ = add_self_loops(edge_index, num_nodes=x.size(0))
            # Step 2: Linearly transform node feature matrix.
            x = self.lin(x)
            # Step 3: Compute normalization.
            row, col = edge_index
            deg = degree(col, x.size(0), dtype=x.dtype)
            deg_inv_sqrt = deg.pow(-0.5)
            deg_inv_sqrt[deg_inv_sqrt == float('inf')] = 0
            norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
            # Step 4-5: Start propagating messages.
            out = self.propagate(edge_index, x=x, norm=norm)
            # Step 6: Apply a final bias vector.
            out = out + self.bias
            return out

        def message(self, x_j, norm):
            return norm.view(-1, 1) * x_j

    return GCNConv(8, 4), [_graph(10, 30), _graph(13, 41)]


@case(PYG + "generated/torch_geometric.nn.models.GCN.html (the GCN model of torch_geometric.nn.models)", requires=PYG_REQ)
def pyg_basic_gnn_model():
    from torch_geometric.nn.models import GCN

    model = GCN(8, 16, num_layers=2, out_channels=4)
    return model, [_graph(10, 30), _graph(12, 35)]


@case(PYG + "generated/torch_geometric.nn.conv.GINConv.html (GINConv with an MLP, graphs of several sizes)",
      requires=PYG_REQ)
def pyg_gin_conv():
    from torch_geometric.nn import GINConv

    conv = GINConv(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16)))
    return conv, [_graph(10, 30), _graph(11, 33), _graph(19, 70)]


@case(PYG + "generated/torch_geometric.nn.conv.TransformerConv.html (TransformerConv, graphs of several sizes)",
      requires=PYG_REQ)
def pyg_transformer_conv():
    from torch_geometric.nn import TransformerConv

    conv = TransformerConv(8, 8, heads=2)
    return conv, [_graph(10, 30), _graph(12, 40)]


@case("https://github.com/pyg-team/pytorch_geometric/issues/8467 (RGCNConv has multiple graph breaks)", requires=PYG_REQ)
def pyg_rgcn_conv_issue():
    from torch_geometric.nn import RGCNConv

    conv = RGCNConv(4, 32, 2, aggr='sum')
    x1 = torch.randn(4, 4)
    edge_index = torch.tensor([
        [0, 1, 1, 2, 2, 3],
        [0, 0, 1, 0, 1, 1],
    ])
    edge_type = torch.tensor([0, 1, 1, 0, 0, 1])
    return conv, [(x1, edge_index, edge_type)]


@case(PYG + "generated/torch_geometric.utils.to_dense_adj.html (dense adjacency of a batch of graphs)", requires=PYG_REQ)
def pyg_to_dense_adj():
    from torch_geometric.utils import to_dense_adj

    def adj(edge_index, batch):
        return to_dense_adj(edge_index, batch)

    return adj, [(torch.randint(0, 4, (2, 12)), _batch_vec(4, 6))]


@case(PYG + "generated/torch_geometric.utils.k_hop_subgraph.html (the 2-hop neighbourhood of a node, per node)",
      requires=PYG_REQ)
def pyg_k_hop_subgraph():
    from torch_geometric.utils import k_hop_subgraph

    def neighbourhood(node, edge_index):
        subset, sub_edges, mapping, mask = k_hop_subgraph(node, 2, edge_index, relabel_nodes=True)
        return subset, sub_edges

    edge_index = torch.randint(0, 12, (2, 30))
    return neighbourhood, [(0, edge_index), (3, edge_index)]


@case(PYG + "generated/torch_geometric.utils.softmax.html (attention softmax over each node's incoming edges)",
      requires=PYG_REQ)
def pyg_edge_softmax():
    from torch_geometric.utils import softmax

    def attend(scores, index):
        return softmax(scores, index)

    return attend, [(torch.randn(30), torch.randint(0, 10, (30,))), (torch.randn(44), torch.randint(0, 12, (44,)))]


@case(PYG + "generated/torch_geometric.utils.negative_sampling.html (negative edges for link prediction, each step)",
      requires=PYG_REQ)
def pyg_negative_sampling_link_prediction():
    from torch_geometric.utils import negative_sampling

    def link_logits(z, edge_index):
        neg = negative_sampling(edge_index, num_nodes=z.size(0))
        pos = (z[edge_index[0]] * z[edge_index[1]]).sum(-1)
        negs = (z[neg[0]] * z[neg[1]]).sum(-1)
        return pos.mean() - negs.mean()

    return link_logits, [(torch.randn(12, 4), torch.randint(0, 12, (2, 20)))]


# -- kornia ---------------------------------------------------------------------------------------
KO_REQ = ("kornia",)


@case(KORNIA + "augmentation.module.html (RandomHorizontalFlip on each training batch)", requires=KO_REQ)
def kornia_random_horizontal_flip():
    import kornia.augmentation as K

    aug = K.RandomHorizontalFlip(p=0.5)
    return aug, [(torch.rand(4, 3, 16, 16),), (torch.rand(2, 3, 16, 16),)]


@case(KORNIA + "augmentation.container.html (AugmentationSequential of ColorJitter and RandomAffine, a training step)",
      requires=KO_REQ)
def kornia_augmentation_sequential_training_step():
    import kornia.augmentation as K

    augs = K.AugmentationSequential(
        K.ColorJitter(0.1, 0.1, 0.1, 0.1, p=1.0),
        K.RandomAffine(degrees=15, translate=(0.1, 0.1), p=1.0),
    )
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def train_step(images, labels):
        images = augs(images)
        loss = F.cross_entropy(net(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    return train_step, [(torch.rand(4, 3, 16, 16), torch.randint(0, 2, (4,)))]


@case(KORNIA + "filters.html (gaussian_blur2d, the kernel size chosen per image size)", requires=KO_REQ)
def kornia_gaussian_blur_kernel_per_size():
    import kornia

    def blur(img, k):
        return kornia.filters.gaussian_blur2d(img, (k, k), (1.5, 1.5))

    return blur, [(torch.rand(1, 3, 16, 16), 3), (torch.rand(1, 3, 24, 24), 5), (torch.rand(1, 3, 32, 32), 7)]


@case(KORNIA + "color.html (rgb_to_grayscale on images of several sizes)", requires=KO_REQ)
def kornia_rgb_to_grayscale_sizes():
    import kornia

    def gray(img):
        return kornia.color.rgb_to_grayscale(img)

    return gray, [(torch.rand(1, 3, h, w),) for h, w in ((16, 16), (20, 24), (32, 30))]


@case(KORNIA + "geometry.transform.html (warp_perspective to an output size per call)", requires=KO_REQ)
def kornia_warp_perspective_sizes():
    import kornia

    def warp(img, M, h, w):
        return kornia.geometry.transform.warp_perspective(img, M, dsize=(h, w))

    M = torch.eye(3)[None]
    return warp, [(torch.rand(1, 3, 16, 16), M, 16, 16), (torch.rand(1, 3, 16, 16), M, 20, 24), (torch.rand(1, 3, 16, 16), M, 8, 8)]


@case(KORNIA + "losses.html (SSIMLoss in an autoencoder's training step)", requires=KO_REQ)
def kornia_ssim_loss_training():
    import kornia

    ae = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1), nn.Sigmoid())
    crit = kornia.losses.SSIMLoss(5)
    opt = torch.optim.Adam(ae.parameters(), lr=1e-3)

    def step(img):
        loss = crit(ae(img), img)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    return step, [(torch.rand(2, 3, 16, 16),), (torch.rand(3, 3, 24, 24),)]


@case(KORNIA + "augmentation.module.html (RandomResizedCrop to a fixed size, batches of several sizes)", requires=KO_REQ)
def kornia_random_resized_crop():
    import kornia.augmentation as K

    aug = K.RandomResizedCrop((12, 12), p=1.0)
    return aug, [(torch.rand(2, 3, 16, 16),), (torch.rand(2, 3, 24, 20),)]


@case(KORNIA + "geometry.transform.html (resize to the size each call asks)", requires=KO_REQ)
def kornia_resize_sizes():
    import kornia

    def resize(img, size):
        return kornia.geometry.transform.resize(img, size)

    img = torch.rand(1, 3, 32, 32)
    return resize, [(img, (16, 16)), (img, (24, 24)), (img, (20, 12))]


@case(KORNIA + "filters.html (canny edges of a batch)", requires=KO_REQ)
def kornia_canny():
    import kornia

    def edges(img):
        magnitude, edges = kornia.filters.canny(img)
        return edges

    return edges, [(torch.rand(1, 3, 16, 16),)]


@case(KORNIA + "morphology.html (dilation with a kernel per call)", requires=KO_REQ)
def kornia_dilation_kernel_sizes():
    import kornia

    def dilate(img, k):
        return kornia.morphology.dilation(img, torch.ones(k, k))

    img = torch.rand(1, 1, 16, 16)
    return dilate, [(img, 3), (img, 5)]


@case(KORNIA + "geometry.transform.html (rotate by an angle per image, images of two sizes)", requires=KO_REQ)
def kornia_rotate():
    import kornia

    def rot(img, angle):
        return kornia.geometry.transform.rotate(img, angle)

    return rot, [(torch.rand(2, 3, 16, 16), torch.tensor([10.0, 20.0])), (torch.rand(3, 3, 20, 20), torch.tensor([5.0, 15.0, 30.0]))]


@case(KORNIA + "augmentation.module.html (RandomGaussianNoise and Normalize in a data pipeline)", requires=KO_REQ)
def kornia_noise_normalize_pipeline():
    import kornia.augmentation as K

    pipe = nn.Sequential(K.RandomGaussianNoise(std=0.1, p=0.5),
                         K.Normalize(mean=torch.tensor([0.5, 0.5, 0.5]), std=torch.tensor([0.2, 0.2, 0.2])))
    return pipe, [(torch.rand(4, 3, 8, 8),), (torch.rand(6, 3, 8, 8),)]


# -- torchmetrics ----------------------------------------------------------------------------------
TM_REQ = ("torchmetrics",)


@case("https://github.com/Lightning-AI/torchmetrics/issues/1780 (a metric's update in a compiled validation step)",
      requires=TM_REQ)
def torchmetrics_accuracy_update_in_step():
    import torchmetrics

    model = nn.Linear(8, 5)
    metric = torchmetrics.Accuracy(task="multiclass", num_classes=5)

    def validation_step(x, y):
        preds = model(x)
        metric.update(preds, y)
        return preds

    return validation_step, [(torch.randn(6, 8), torch.randint(0, 5, (6,))) for _ in range(3)]


@case(TM + "regression/mean_squared_error.html (MeanSquaredError called as a module each batch)", requires=TM_REQ)
def torchmetrics_mse_forward():
    import torchmetrics

    mse = torchmetrics.MeanSquaredError()
    return mse, [(torch.randn(8), torch.randn(8)), (torch.randn(5), torch.randn(5))]


@case(TM + "classification/accuracy.html (functional multiclass accuracy)", requires=TM_REQ)
def torchmetrics_functional_accuracy():
    from torchmetrics.functional.classification import multiclass_accuracy

    def acc(preds, target):
        return multiclass_accuracy(preds, target, num_classes=4)

    return acc, [(torch.randn(10, 4), torch.randint(0, 4, (10,)))]


@case(TM + "classification/f1_score.html (F1Score forward, batches of several sizes)", requires=TM_REQ)
def torchmetrics_f1_forward():
    import torchmetrics

    f1 = torchmetrics.F1Score(task="multiclass", num_classes=3)
    return f1, [(torch.randn(n, 3), torch.randint(0, 3, (n,))) for n in (8, 6, 11)]


@case(TM + "classification/auroc.html (binary_auroc of a validation batch)", requires=TM_REQ)
def torchmetrics_binary_auroc():
    from torchmetrics.functional.classification import binary_auroc

    def auroc(preds, target):
        return binary_auroc(preds, target)

    return auroc, [(torch.rand(16), torch.randint(0, 2, (16,)))]


@case(TM + "regression/r2_score.html (functional r2_score, batches of several sizes)", requires=TM_REQ)
def torchmetrics_r2_score():
    from torchmetrics.functional import r2_score

    def r2(preds, target):
        return r2_score(preds, target)

    return r2, [(torch.randn(n), torch.randn(n)) for n in (8, 10, 13)]


@case(TM + "classification/confusion_matrix.html (ConfusionMatrix update and compute each epoch)", requires=TM_REQ)
def torchmetrics_confusion_matrix():
    import torchmetrics

    cm = torchmetrics.ConfusionMatrix(task="multiclass", num_classes=3)

    def epoch(preds, target):
        cm.update(preds, target)
        out = cm.compute()
        cm.reset()
        return out

    return epoch, [(torch.randint(0, 3, (10,)), torch.randint(0, 3, (10,)))]


@case(TM + "image/peak_signal_noise_ratio.html (PSNR of reconstructions, batches of several sizes)", requires=TM_REQ)
def torchmetrics_psnr():
    from torchmetrics.image import PeakSignalNoiseRatio

    psnr = PeakSignalNoiseRatio(data_range=1.0)
    return psnr, [(torch.rand(b, 3, 8, 8), torch.rand(b, 3, 8, 8)) for b in (2, 3, 5)]


@case(TM + "aggregation.html (MeanMetric of a running loss)", requires=TM_REQ)
def torchmetrics_mean_metric_running_loss():
    import torchmetrics

    running = torchmetrics.MeanMetric()

    def log_loss(loss):
        running.update(loss)
        return running.compute()

    return log_loss, [(torch.tensor(0.5),), (torch.tensor(0.7),), (torch.tensor(0.2),)]


@case(TM + "pairwise/cosine_similarity.html (pairwise cosine similarity of embeddings)", requires=TM_REQ)
def torchmetrics_pairwise_cosine():
    from torchmetrics.functional import pairwise_cosine_similarity

    def sim(a, b):
        return pairwise_cosine_similarity(a, b)

    return sim, [(torch.randn(4, 8), torch.randn(5, 8)), (torch.randn(6, 8), torch.randn(3, 8))]


# -- einops ---------------------------------------------------------------------------------------
EI_REQ = ("einops",)


@case(EINOPS + "api/rearrange/ (rearrange heads in attention, sequences of several lengths)", requires=EI_REQ)
def einops_rearrange_attention_heads():
    from einops import rearrange

    class Attention(nn.Module):
        def __init__(self, dim=16, heads=4):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, dim * 3)
            self.out = nn.Linear(dim, dim)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = (rearrange(t, 'b n (h d) -> b h n d', h=self.heads) for t in (q, k, v))
            attn = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).softmax(-1)
            return self.out(rearrange(attn @ v, 'b h n d -> b n (h d)'))

    return Attention(), [(torch.randn(2, n, 16),) for n in (5, 9, 12)]


@case("https://github.com/arogozhnikov/einops#layers (a ViT's patch embedding with einops.layers.torch.Rearrange, two image sizes)",
      requires=EI_REQ)
def einops_layers_patch_embedding():
    from einops.layers.torch import Rearrange

    patch = nn.Sequential(
        Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=4, p2=4),
        nn.Linear(4 * 4 * 3, 32),
    )
    return patch, [(torch.rand(2, 3, 16, 16),), (torch.rand(2, 3, 24, 24),), (torch.rand(2, 3, 32, 16),)]


@case(EINOPS + "api/reduce/ (mean-pooling of token features with reduce, batches of several lengths)", requires=EI_REQ)
def einops_reduce_pooling():
    from einops import reduce

    def pool(x):
        return reduce(x, 'b n d -> b d', 'mean')

    return pool, [(torch.randn(2, n, 8),) for n in (4, 7, 10)]


@case(EINOPS + "api/repeat/ (a CLS token repeated over the batch, batches of several sizes)", requires=EI_REQ)
def einops_repeat_cls_token():
    from einops import repeat

    class WithCls(nn.Module):
        def __init__(self):
            super().__init__()
            self.cls_token = nn.Parameter(torch.randn(1, 1, 8))

        def forward(self, x):
            b = x.shape[0]
            cls = repeat(self.cls_token, '1 1 d -> b 1 d', b=b)
            return torch.cat([cls, x], dim=1)

    return WithCls(), [(torch.randn(b, 5, 8),) for b in (2, 3, 6)]


@case(EINOPS + "api/pack_unpack/ (pack a CLS token with the patches, unpack after the block)", requires=EI_REQ)
def einops_pack_unpack():
    from einops import pack, unpack

    block = nn.Linear(8, 8)

    def forward(cls, patches):
        x, ps = pack([cls, patches], 'b * d')
        x = block(x)
        cls, patches = unpack(x, ps, 'b * d')
        return cls, patches

    return forward, [(torch.randn(2, 8), torch.randn(2, n, 8)) for n in (4, 6, 9)]


@case(EINOPS + "api/einsum/ (einops.einsum with named axes, batches of several sizes)", requires=EI_REQ)
def einops_einsum():
    from einops import einsum

    def bilinear(x, W, y):
        return einsum(x, W, y, 'batch i, i j, batch j -> batch')

    W = torch.randn(4, 5)
    return bilinear, [(torch.randn(b, 4), W, torch.randn(b, 5)) for b in (3, 7, 2)]


@case(EINOPS + "api/parse_shape/ (parse_shape to reshape back after flattening)", requires=EI_REQ)
def einops_parse_shape():
    from einops import parse_shape, rearrange

    conv = nn.Conv2d(3, 3, 1)

    def tokens_and_back(img):
        shape = parse_shape(img, 'b c h w')
        seq = rearrange(img, 'b c h w -> b (h w) c')
        return conv(rearrange(seq, 'b (h w) c -> b c h w', **shape))

    return tokens_and_back, [(torch.rand(1, 3, h, w),) for h, w in ((8, 8), (8, 12), (12, 12))]


@case(EINOPS + "1-einops-basics/ (rearrange into a grid with the axis length passed in)", requires=EI_REQ)
def einops_rearrange_axis_length_argument():
    from einops import rearrange

    def grid(images, rows):
        return rearrange(images, '(b1 b2) c h w -> c (b1 h) (b2 w)', b1=rows)

    imgs = torch.rand(6, 3, 4, 4)
    return grid, [(imgs, 2), (imgs, 3), (imgs, 1)]


# -- torchdiffeq ----------------------------------------------------------------------------------
TD_REQ = ("torchdiffeq",)


class _ODEFunc(nn.Module):
    """The ODE function of torchdiffeq's examples/ode_demo.py."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))

    def forward(self, t, y):
        return self.net(y ** 3)


@case(TDE + "/blob/master/examples/ode_demo.py (odeint with the default dopri5 solver, a training step)",
      requires=TD_REQ)
def torchdiffeq_dopri5_training_step():
    from torchdiffeq import odeint

    func = _ODEFunc()
    optimizer = torch.optim.RMSprop(func.parameters(), lr=1e-3)
    true_y0 = torch.tensor([[2., 0.]])
    t = torch.linspace(0., 1., 5)
    true_y = torch.randn(5, 1, 2)

    def step(batch_y0):
        optimizer.zero_grad()
        pred_y = odeint(func, batch_y0, t)
        loss = torch.mean(torch.abs(pred_y - true_y))
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step, [(true_y0,)]


@case(TDE + "#basic-usage (odeint with the fixed-grid rk4 method, time grids of several lengths)", requires=TD_REQ)
def torchdiffeq_rk4_time_grids():
    from torchdiffeq import odeint

    func = _ODEFunc()

    def solve(y0, t):
        return odeint(func, y0, t, method='rk4')

    y0 = torch.tensor([[2., 0.]])
    return solve, [(y0, torch.linspace(0., 1., n)) for n in (5, 8, 11)]


@case(TDE + "#basic-usage (odeint_adjoint: memory-efficient backward through the solver)", requires=TD_REQ)
def torchdiffeq_adjoint():
    from torchdiffeq import odeint_adjoint

    func = _ODEFunc()

    def loss_of(y0, t):
        return odeint_adjoint(func, y0, t, method='rk4').pow(2).mean()

    return loss_of, [(torch.tensor([[2., 0.]]), torch.linspace(0., 1., 4))]


@case(TDE + "#event-handling (odeint_event: a bouncing ball stops at the ground)", requires=TD_REQ)
def torchdiffeq_event():
    from torchdiffeq import odeint_event

    def dynamics(t, state):
        pos, vel = state
        return vel, torch.full_like(vel, -9.8)

    def event_fn(t, state):
        pos, vel = state
        return pos

    def fall(pos0):
        event_t, solution = odeint_event(dynamics, (pos0, torch.tensor(0.0)), torch.tensor(0.0), event_fn=event_fn,
                                         method='rk4', options={'step_size': 0.05})
        return event_t

    return fall, [(torch.tensor(1.0),)]


@case(TDE + "#basic-usage (euler with the step size given as an option, several step sizes)", requires=TD_REQ)
def torchdiffeq_euler_step_sizes():
    from torchdiffeq import odeint

    func = _ODEFunc()

    def solve(y0, step):
        return odeint(func, y0, torch.tensor([0., 0.5]), method='euler', options={'step_size': step})

    y0 = torch.tensor([[2., 0.]])
    return solve, [(y0, 0.1), (y0, 0.05), (y0, 0.25)]


@case(TDE + "/blob/master/examples/odenet_mnist.py (ODEBlock: a neural ODE layer with rtol/atol, inference)",
      requires=TD_REQ)
def torchdiffeq_odeblock_inference():
    from torchdiffeq import odeint

    class ODEfunc(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.fc = nn.Linear(dim, dim)
            self.nfe = 0

        def forward(self, t, x):
            self.nfe += 1
            return torch.tanh(self.fc(x))

    class ODEBlock(nn.Module):
        def __init__(self, odefunc):
            super(ODEBlock, self).__init__()
            self.odefunc = odefunc
            self.integration_time = torch.tensor([0, 1]).float()

        def forward(self, x):
            self.integration_time = self.integration_time.type_as(x)
            out = odeint(self.odefunc, x, self.integration_time, rtol=1e-3, atol=1e-3)
            return out[1]

    block = ODEBlock(ODEfunc(4)).eval()
    return block, [(torch.randn(3, 4),), (torch.randn(5, 4),)]


# -- gpytorch -------------------------------------------------------------------------------------
GP_REQ = ("gpytorch",)


def _exact_gp(n: int = 12):
    import gpytorch

    class ExactGPModel(gpytorch.models.ExactGP):
        def __init__(self, train_x, train_y, likelihood):
            super(ExactGPModel, self).__init__(train_x, train_y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            mean_x = self.mean_module(x)
            covar_x = self.covar_module(x)
            return gpytorch.distributions.MultivariateNormal(mean_x, covar_x)

    train_x = torch.linspace(0, 1, n)
    train_y = torch.sin(train_x * (2 * math.pi)) + torch.randn(train_x.size()) * math.sqrt(0.04)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    return ExactGPModel(train_x, train_y, likelihood), likelihood, train_x, train_y


@case(GPY + "examples/01_Exact_GPs/Simple_GP_Regression.html (the training loop of the simple GP regression)",
      requires=GP_REQ)
def gpytorch_exact_gp_training_step():
    import gpytorch

    model, likelihood, train_x, train_y = _exact_gp()
    model.train()
    likelihood.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)

    def train_step(train_x, train_y):
        optimizer.zero_grad()
        output = model(train_x)
        loss = -mll(output, train_y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return train_step, [(train_x, train_y), (train_x, train_y)]


@case(GPY + "examples/01_Exact_GPs/Simple_GP_Regression.html (predictions with fast_pred_var, test sets of several sizes)",
      requires=GP_REQ)
def gpytorch_exact_gp_predict():
    import gpytorch

    model, likelihood, train_x, train_y = _exact_gp()
    model.eval()
    likelihood.eval()

    def predict(test_x):
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            observed_pred = likelihood(model(test_x))
            return observed_pred.mean, observed_pred.variance

    return predict, [(torch.linspace(0, 1, n),) for n in (7, 9)]


@case(GPY + "kernels.html (an RBF kernel matrix evaluated to a dense tensor, inputs of several sizes)", requires=GP_REQ)
def gpytorch_rbf_kernel_dense():
    import gpytorch

    kernel = gpytorch.kernels.RBFKernel()

    def gram(x):
        return kernel(x).to_dense()

    return gram, [(torch.randn(n, 2),) for n in (5, 8, 11)]


@case(GPY + "kernels.html (ScaleKernel(MaternKernel) between two sets of points)", requires=GP_REQ)
def gpytorch_matern_cross_covariance():
    import gpytorch

    kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5))

    def cross(x1, x2):
        return kernel(x1, x2).to_dense()

    return cross, [(torch.randn(4, 3), torch.randn(6, 3)), (torch.randn(5, 3), torch.randn(2, 3))]


@case(GPY + "examples/04_Variational_and_Approximate_GPs/SVGP_Regression_CUDA.html (SVGP, a minibatch training step)",
      requires=GP_REQ)
def gpytorch_svgp_minibatch_step():
    import gpytorch
    from gpytorch.models import ApproximateGP
    from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy

    class GPModel(ApproximateGP):
        def __init__(self, inducing_points):
            variational_distribution = CholeskyVariationalDistribution(inducing_points.size(0))
            variational_strategy = VariationalStrategy(self, inducing_points, variational_distribution,
                                                       learn_inducing_locations=True)
            super(GPModel, self).__init__(variational_strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            mean_x = self.mean_module(x)
            covar_x = self.covar_module(x)
            return gpytorch.distributions.MultivariateNormal(mean_x, covar_x)

    model = GPModel(inducing_points=torch.randn(6, 2))
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    optimizer = torch.optim.Adam([{'params': model.parameters()}, {'params': likelihood.parameters()}], lr=0.01)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=40)

    def step(x_batch, y_batch):
        optimizer.zero_grad()
        output = model(x_batch)
        loss = -mll(output, y_batch)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step, [(torch.randn(8, 2), torch.randn(8)), (torch.randn(5, 2), torch.randn(5))]


@case(GPY + "distributions.html (MultivariateNormal log_prob of observations)", requires=GP_REQ)
def gpytorch_mvn_log_prob():
    import gpytorch

    def log_prob(mean, cov_factor, y):
        cov = cov_factor @ cov_factor.mT + torch.eye(mean.shape[-1])
        return gpytorch.distributions.MultivariateNormal(mean, cov).log_prob(y)

    return log_prob, [(torch.zeros(n), torch.randn(n, n), torch.randn(n)) for n in (4, 6)]


# -- e3nn -----------------------------------------------------------------------------------------
E3_REQ = ("e3nn",)


@case(E3NN + "api/o3/o3_linear.html (o3.Linear on node features of molecules of several sizes)", requires=E3_REQ)
def e3nn_linear_node_counts():
    from e3nn import o3

    lin = o3.Linear("4x0e + 2x1o", "3x0e + 2x1o")
    return lin, [(torch.randn(n, 10),) for n in (5, 8, 12)]


@case(E3NN + "api/o3/o3_sh.html (spherical harmonics of edge vectors, graphs of several sizes)", requires=E3_REQ)
def e3nn_spherical_harmonics_edges():
    from e3nn import o3

    def edge_sh(pos, edge_src, edge_dst):
        edge_vec = pos[edge_dst] - pos[edge_src]
        return o3.spherical_harmonics([0, 1, 2], edge_vec, normalize=True, normalization='component')

    def g(n, e):
        return torch.randn(n, 3), torch.randint(0, n, (e,)), torch.randint(0, n, (e,))

    return edge_sh, [g(6, 12), g(9, 20), g(11, 30)]


@case(E3NN + "api/o3/o3_tp.html (FullyConnectedTensorProduct of node features and edge harmonics)", requires=E3_REQ)
def e3nn_fully_connected_tensor_product():
    from e3nn import o3

    tp = o3.FullyConnectedTensorProduct("2x0e + 1x1o", "1x0e + 1x1o", "2x0e + 1x1o")
    return tp, [(torch.randn(n, 5), torch.randn(n, 4)) for n in (6, 10)]


@case(E3NN + "api/nn/nn_gate.html (Gate activation, batches of several sizes)", requires=E3_REQ)
def e3nn_gate():
    from e3nn import nn as enn

    gate = enn.Gate("4x0e", [torch.relu], "2x0e", [torch.sigmoid], "2x1o")
    return gate, [(torch.randn(n, gate.irreps_in.dim),) for n in (3, 7, 9)]


@case(E3NN + "guide/convolution.html (the guide's point convolution, graphs of several sizes)",
      requires=E3_REQ)
def e3nn_guide_convolution():
    from e3nn import o3
    from e3nn.math import soft_one_hot_linspace

    irreps_input = o3.Irreps("4x0e + 1x1o")
    irreps_sh = o3.Irreps.spherical_harmonics(lmax=1)
    irreps_output = o3.Irreps("4x0e + 1x1o")
    tp = o3.FullyConnectedTensorProduct(irreps_input, irreps_sh, irreps_output, shared_weights=False)
    fc = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, tp.weight_numel))

    def conv(f_in, pos, edge_src, edge_dst):
        num_nodes = pos.shape[0]
        edge_vec = pos[edge_dst] - pos[edge_src]
        sh = o3.spherical_harmonics(irreps_sh, edge_vec, normalize=True, normalization='component')
        emb = soft_one_hot_linspace(edge_vec.norm(dim=1), 0.0, 2.0, 5, basis='smooth_finite', cutoff=True).mul(5**0.5)
        summand = tp(f_in[edge_src], sh, fc(emb))
        f_out = torch.zeros(num_nodes, irreps_output.dim).index_add(0, edge_dst, summand)
        return f_out

    def graph(n, e):
        return torch.randn(n, irreps_input.dim), torch.randn(n, 3), torch.randint(0, n, (e,)), torch.randint(0, n, (e,))

    return conv, [graph(6, 14), graph(9, 25), graph(12, 31)]


@case(E3NN + "api/o3/o3_irreps.html (Irreps parsed from a string in the forward, per irreps)", requires=E3_REQ)
def e3nn_irreps_in_forward():
    from e3nn import o3

    def norms(x, irreps):
        irreps = o3.Irreps(irreps)
        out = []
        for mul_ir, sl in zip(irreps, irreps.slices()):
            out.append(x[:, sl].reshape(x.shape[0], mul_ir.mul, mul_ir.ir.dim).norm(dim=-1))
        return torch.cat(out, dim=1)

    return norms, [(torch.randn(4, 5), "2x0e + 1x1o"), (torch.randn(4, 8), "2x0e + 2x1o")]


@case(E3NN + "api/o3/o3_wigner.html (rotating features with the irreps' D matrix of random rotations)", requires=E3_REQ)
def e3nn_rotate_features():
    from e3nn import o3

    irreps = o3.Irreps("2x0e + 1x1o + 1x2e")

    def rotate(x, R):
        D = irreps.D_from_matrix(R)
        return x @ D.T

    return rotate, [(torch.randn(5, irreps.dim), o3.rand_matrix()), (torch.randn(7, irreps.dim), o3.rand_matrix())]


@case(E3NN + "api/math.html (soft_one_hot_linspace radial embedding with a cutoff per call)", requires=E3_REQ)
def e3nn_soft_one_hot_cutoffs():
    from e3nn.math import soft_one_hot_linspace

    def embed(r, cutoff):
        return soft_one_hot_linspace(r, 0.0, cutoff, 8, basis='bessel', cutoff=True)

    r = torch.rand(20) * 3
    return embed, [(r, 2.0), (r, 3.0), (r, 5.0)]


# -- questions from forum threads, blog posts and documentation pages ------------------------------
@case(DISCUSS + "graph-breaks-or-no-graph-breaks-in-torchdynamo/181208 (a branch on the input's shape, inputs of 5 then 12 rows)")
def discuss_branch_on_shape():
    def func(x):
        if x.shape[0] > 10:
            return x.cos()
        return x.sin()

    return func, [(torch.randn(5, 4),), (torch.randn(12, 4),), (torch.randn(7, 4),)]


@case(DISCUSS + "graph-breaks-or-no-graph-breaks-in-torchdynamo/181208 (toy_example: explain() and the graph_breaks log disagree)")
def discuss_toy_example_sum_branch():
    def toy_example(a, b):
        x = a / (torch.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return x * b

    return toy_example, [(torch.randn(10), torch.randn(10)) for i in range(5)]


@case(DISCUSS + "understanding-dynamic-shapes-and-guards-and-when-it-does-does-not-cause-graph-breaks/208717 (two cache entries for f)")
def discuss_cat_size_branch_two_entries():
    def f(x, y):
        z = torch.cat([x, y])
        if z.size(0) > 2:
            return z.mul(2)
        else:
            return z.add(2)

    calls = []
    for _ in range(3):
        calls.append((torch.randn(2), torch.randn(2)))
        calls.append((torch.rand(1), torch.rand(1)))
    return f, calls


@case("https://docs.pytorch.org/docs/main/compile/programming_model.recompilation.html (Wrapping Constants with Tensors: fn(torch.ones(i), 0.5 + i))")
def docs_recompilation_constant_and_size():
    def fn(x, c):
        return x + c

    return fn, [(torch.ones(i), 0.5 + i) for i in range(5)]


@case("https://docs.pytorch.org/docs/main/compile/programming_model.recompilation.html (an LR scheduler initialised with a constant lr)")
def docs_recompilation_lr_scheduler():
    mod = torch.nn.Linear(3, 3)
    opt = torch.optim.Adam(mod.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, 0.9)

    def fn(inp):
        opt.zero_grad(True)
        out = mod(inp).sum()
        out.backward()
        opt.step()
        sched.step()

    return fn, [(torch.ones(3, 3),) for i in range(5)]


@case("https://torchcompile-guards.hashnode.dev/tag/pytorch (Inside torch.compile Guards: a global object's attributes, changed between calls)")
def blog_guards_coefficient_pair():
    class CoefficientPair:
        def __init__(self):
            self.a = 2
            self.b = 5

    pair = CoefficientPair()

    class Mod(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(8)

        def forward(self, x):
            return self.norm(x) + pair.a + pair.b

    mod = Mod()
    x = torch.rand(4, 8)

    def with_a(a):
        def call(m):
            pair.a = a
            return m(x)
        return call

    return mod, [with_a(2), with_a(3), with_a(4)]


@case("https://www.scoding.kr/2026/01/how-to-fix-torchcompile-performance.html (a print of the shape in forward)")
def blog_print_shape_in_forward():
    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(128, 128)

        def forward(self, x):
            x = self.linear(x)
            print(f"Shape: {x.shape}")  # This causes a graph break!
            return x.relu()

    model = MyModel()
    x = torch.randn(32, 128)
    return model, [(x,)]


@case("https://github.com/pytorch/pytorch/issues/133965 (a PyG GNN of GATv2Conv layers: unsupported builtin _abc._abc_instancecheck)",
      requires=PYG_REQ)
def pyg_gatv2_issue():
    from torch_geometric.nn import GATv2Conv

    class GNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GATv2Conv(8, 8, heads=2, edge_dim=2)
            self.conv2 = GATv2Conv(16, 4, heads=1, edge_dim=2)

        def forward(self, x, edge_index, edge_attr):
            x = self.conv1(x, edge_index, edge_attr).relu()
            return self.conv2(x, edge_index, edge_attr)

    def g(n, e):
        x, ei = _graph(n, e)
        return x, ei, torch.randn(e, 2)

    return GNN(), [g(10, 30), g(12, 36)]


@case("https://github.com/pyg-team/pytorch_geometric/issues/8418 (the GCN example compiled: train then evaluate under no_grad, each epoch)",
      requires=PYG_REQ)
def pyg_compiled_gcn_train_then_eval():
    from torch_geometric.nn import GCNConv

    class GCN(torch.nn.Module):
        def __init__(self, in_channels, hidden_channels, out_channels):
            super().__init__()
            self.conv1 = GCNConv(in_channels, hidden_channels, normalize=False)
            self.conv2 = GCNConv(hidden_channels, out_channels, normalize=False)

        def forward(self, x, edge_index, edge_weight=None):
            x = F.dropout(x, p=0.5, training=self.training)
            x = self.conv1(x, edge_index, edge_weight).relu()
            x = F.dropout(x, p=0.5, training=self.training)
            x = self.conv2(x, edge_index, edge_weight)
            return x

    model = GCN(8, 16, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, edge_index = _graph(10, 30)
    y = torch.randint(0, 3, (10,))

    def train(m):
        model.train()
        optimizer.zero_grad()
        out = m(x, edge_index)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        return float(loss)

    @torch.no_grad()
    def test(m):
        model.eval()
        pred = m(x, edge_index).argmax(dim=-1)
        return pred

    return model, [train, test, train, test]


@case("https://github.com/kornia/kornia/pull/3797 (RandomRotation and RandomAffine: _extract_device_dtype breaks in the parameter generator)",
      requires=("kornia",))
def kornia_random_rotation_issue():
    import kornia.augmentation as K

    aug = K.RandomRotation(degrees=30.0, p=1.0)
    return aug, [(torch.rand(2, 3, 16, 16),), (torch.rand(3, 3, 16, 16),)]


@case("https://github.com/arogozhnikov/einops/pull/251 (einops ops in a compiled model, before allow_ops_in_compiled_graph)",
      requires=("einops",))
def einops_ops_in_compiled_model_issue():
    from einops import rearrange, reduce

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(12, 4)

        def forward(self, x):
            x = rearrange(x, 'b c (h h2) (w w2) -> b (c h2 w2) h w', h2=2, w2=2)
            x = reduce(x, 'b c h w -> b c', 'max')
            return self.fc(x)

    return Net(), [(torch.randn(b, 3, 8, 8),) for b in (2, 5)]


# -- more library calls, as their users make them ------------------------------------------------------
@case(PYG + "get_started/introduction.html (a model whose forward takes the Data object, graphs of several sizes)",
      requires=PYG_REQ)
def pyg_forward_takes_data_object():
    from torch_geometric.data import Data
    from torch_geometric.nn import GCNConv

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(8, 16, normalize=False)
            self.conv2 = GCNConv(16, 2, normalize=False)

        def forward(self, data):
            x, edge_index = data.x, data.edge_index
            x = self.conv1(x, edge_index)
            x = F.relu(x)
            x = self.conv2(x, edge_index)
            return F.log_softmax(x, dim=1)

    def data(n, e):
        x, edge_index = _graph(n, e)
        return Data(x=x, edge_index=edge_index)

    return Net(), [(data(10, 30),), (data(13, 40),), (data(16, 50),)]


@case(PYG + "get_started/introduction.html#mini-batches (batches from torch_geometric.loader.DataLoader, a training epoch)",
      requires=PYG_REQ)
def pyg_dataloader_batches_training():
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GraphConv, global_add_pool

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = GraphConv(8, 16)
            self.lin = nn.Linear(16, 2)

        def forward(self, x, edge_index, batch):
            x = self.conv(x, edge_index).relu()
            return self.lin(global_add_pool(x, batch))

    dataset = []
    for n in (5, 7, 6, 9, 4, 8):
        x, edge_index = _graph(n, 2 * n)
        dataset.append(Data(x=x, edge_index=edge_index, y=torch.randint(0, 2, (1,))))
    loader = DataLoader(dataset, batch_size=2)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    def step(batch):
        def run(m):
            optimizer.zero_grad()
            out = m(batch.x, batch.edge_index, batch.batch)
            loss = F.cross_entropy(out, batch.y)
            loss.backward()
            optimizer.step()
            return loss.detach()
        return run

    return model, [step(b) for b in loader]


@case(KORNIA + "color.html (rgb_to_hsv and back, frames of several sizes)", requires=("kornia",))
def kornia_hsv_round_trip():
    import kornia

    def shift_hue(img, delta):
        hsv = kornia.color.rgb_to_hsv(img)
        h = (hsv[:, :1] + delta) % (2 * math.pi)
        return kornia.color.hsv_to_rgb(torch.cat([h, hsv[:, 1:]], dim=1))

    return shift_hue, [(torch.rand(1, 3, 8, 8), 0.5), (torch.rand(1, 3, 12, 10), 0.5), (torch.rand(2, 3, 16, 16), 0.5)]


@case(KORNIA + "losses.html (focal_loss for segmentation, batches of several sizes)", requires=("kornia",))
def kornia_focal_loss_segmentation():
    import kornia

    head = nn.Conv2d(3, 4, 1)

    def loss_of(img, target):
        return kornia.losses.focal_loss(head(img), target, alpha=0.5, gamma=2.0, reduction='mean')

    return loss_of, [(torch.rand(b, 3, 8, 8), torch.randint(0, 4, (b, 8, 8))) for b in (2, 3, 5)]


@case(KORNIA + "geometry.transform.html (crop_and_resize of detected boxes)", requires=("kornia",))
def kornia_crop_and_resize_boxes():
    import kornia

    def crops(img, boxes):
        return kornia.geometry.transform.crop_and_resize(img, boxes, (8, 8))

    boxes = torch.tensor([[[2., 2.], [10., 2.], [10., 10.], [2., 10.]]])
    return crops, [(torch.rand(1, 3, 16, 16), boxes), (torch.rand(1, 3, 20, 24), boxes)]


@case(KORNIA + "filters.html (sobel edges of frames of several sizes)", requires=("kornia",))
def kornia_sobel_sizes():
    import kornia

    def edges(img):
        return kornia.filters.sobel(img)

    return edges, [(torch.rand(1, 1, h, w),) for h, w in ((8, 8), (12, 16), (20, 10))]


@case(TM + "regression/pearson_corr_coef.html (PearsonCorrCoef update per batch, compute at the end)",
      requires=("torchmetrics",))
def torchmetrics_pearson_epoch():
    import torchmetrics

    pearson = torchmetrics.PearsonCorrCoef()

    def evaluate(batches):
        def run(step):
            for preds, target in batches:
                step(preds, target)
            return pearson.compute()
        return run

    def step(preds, target):
        pearson.update(preds, target)

    batches = [(torch.randn(6), torch.randn(6)), (torch.randn(4), torch.randn(4))]
    return step, [lambda s: [s(p, t) for p, t in batches]]


@case(TM + "classification/average_precision.html (binary_average_precision of a validation batch)",
      requires=("torchmetrics",))
def torchmetrics_binary_average_precision():
    from torchmetrics.functional.classification import binary_average_precision

    def ap(preds, target):
        return binary_average_precision(preds, target)

    return ap, [(torch.rand(12), torch.randint(0, 2, (12,)))]


@case(TM + "regression/mean_absolute_error.html (functional mean_absolute_error, batches of several sizes)",
      requires=("torchmetrics",))
def torchmetrics_functional_mae_sizes():
    from torchmetrics.functional import mean_absolute_error

    def mae(preds, target):
        return mean_absolute_error(preds, target)

    return mae, [(torch.randn(n, 2), torch.randn(n, 2)) for n in (4, 6, 9)]


@case(TM + "classification/calibration_error.html (multiclass calibration error of a batch)", requires=("torchmetrics",))
def torchmetrics_calibration_error():
    from torchmetrics.functional.classification import multiclass_calibration_error

    def ece(preds, target):
        return multiclass_calibration_error(preds, target, num_classes=3, n_bins=5)

    return ece, [(torch.randn(10, 3).softmax(-1), torch.randint(0, 3, (10,)))]


@case(TM + "aggregation.html (SumMetric with nan_strategy='ignore', per batch)", requires=("torchmetrics",))
def torchmetrics_sum_metric_nan_ignore():
    import torchmetrics

    total = torchmetrics.SumMetric(nan_strategy="ignore")
    return total, [(torch.tensor([1.0, float('nan'), 2.0]),), (torch.tensor([3.0, 4.0]),)]


@case("https://github.com/arogozhnikov/einops#layers (a CNN head with einops' Reduce layer, images of several sizes)",
      requires=("einops",))
def einops_reduce_layer_cnn_head():
    from einops.layers.torch import Reduce

    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
        Reduce('b c h w -> b c', 'mean'),
        nn.Linear(8, 2),
    )
    return model, [(torch.rand(2, 3, s, s),) for s in (8, 12, 16)]


@case(EINOPS + "api/rearrange/ (rearrange a list of frames into a batch, clips of several lengths)", requires=("einops",))
def einops_rearrange_list_of_frames():
    from einops import rearrange

    def stack_frames(frames):
        return rearrange(frames, 't c h w -> c t h w')

    return stack_frames, [([torch.rand(3, 4, 4) for _ in range(t)],) for t in (2, 3, 5)]


@case(TDE + "#keyword-arguments (odeint with rtol and atol chosen per call)", requires=("torchdiffeq",))
def torchdiffeq_tolerances_per_call():
    from torchdiffeq import odeint

    func = _ODEFunc()

    def solve(y0, tol):
        return odeint(func, y0, torch.tensor([0., 0.5]), rtol=tol, atol=tol, method='bosh3')

    y0 = torch.tensor([[2., 0.]])
    return solve, [(y0, 1e-3), (y0, 1e-4)]


@case(TDE + "#basic-usage (a second-order system as a tuple state (position, velocity))", requires=("torchdiffeq",))
def torchdiffeq_tuple_state():
    from torchdiffeq import odeint

    k = nn.Parameter(torch.tensor(2.0))

    def oscillator(t, state):
        x, v = state
        return v, -k * x

    def solve(x0, v0, t):
        xs, vs = odeint(oscillator, (x0, v0), t, method='midpoint')
        return xs

    return solve, [(torch.tensor([1.0]), torch.tensor([0.0]), torch.linspace(0, 1, n)) for n in (4, 6, 9)]


@case(GPY + "examples/01_Exact_GPs/Simple_GP_Regression.html (set_train_data with more points, then predict)",
      requires=GP_REQ)
def gpytorch_set_train_data_grows():
    model, likelihood, train_x, train_y = _exact_gp(8)
    model.eval()
    likelihood.eval()

    def predict(test_x):
        with torch.no_grad():
            return likelihood(model(test_x)).mean

    def with_data(n):
        def run(p):
            x = torch.linspace(0, 1, n)
            model.set_train_data(x, torch.sin(x * 6), strict=False)
            return p(torch.linspace(0, 1, 5))
        return run

    return predict, [with_data(8), with_data(11), with_data(14)]


@case(GPY + "kernels.html (PeriodicKernel matrix of inputs of several sizes)", requires=GP_REQ)
def gpytorch_periodic_kernel_sizes():
    import gpytorch

    kernel = gpytorch.kernels.PeriodicKernel()

    def gram(x):
        return kernel(x).to_dense()

    return gram, [(torch.randn(n, 1),) for n in (4, 7, 10)]


@case(GPY + "likelihoods.html (GaussianLikelihood's marginal of a prior, then the log marginal likelihood by hand)",
      requires=GP_REQ)
def gpytorch_likelihood_marginal():
    import gpytorch

    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    kernel = gpytorch.kernels.RBFKernel()

    def nll(x, y):
        prior = gpytorch.distributions.MultivariateNormal(torch.zeros(x.shape[0]), kernel(x))
        return -likelihood(prior).log_prob(y)

    return nll, [(torch.randn(n, 1), torch.randn(n)) for n in (5, 8)]


@case(E3NN + "api/nn/nn_batchnorm.html (equivariant BatchNorm, training then evaluation)", requires=E3_REQ)
def e3nn_batchnorm_train_eval():
    from e3nn import nn as enn

    bn = enn.BatchNorm("4x0e + 2x1o")
    x = torch.randn(10, 10)

    def train(m):
        bn.train()
        return m(x)

    def evaluate(m):
        bn.eval()
        return m(x)

    return bn, [train, evaluate]


@case(E3NN + "api/o3/o3_norm.html (o3.Norm of features, batches of several sizes)", requires=E3_REQ)
def e3nn_norm_sizes():
    from e3nn import o3

    norm = o3.Norm("2x0e + 2x1o")
    return norm, [(torch.randn(n, 8),) for n in (3, 6, 10)]


@case(E3NN + "api/o3/o3_tp.html (ElementwiseTensorProduct, batches of several sizes)", requires=E3_REQ)
def e3nn_elementwise_tensor_product():
    from e3nn import o3

    tp = o3.ElementwiseTensorProduct("2x0e + 1x1o", "2x0e + 1x1o")
    return tp, [(torch.randn(n, 5), torch.randn(n, 5)) for n in (4, 7)]


@case(E3NN + "api/nn/nn_fc.html (FullyConnectedNet radial network on edge lengths, graphs of several sizes)", requires=E3_REQ)
def e3nn_fully_connected_net_edges():
    from e3nn import nn as enn

    net = enn.FullyConnectedNet([8, 16, 4], torch.nn.functional.silu)

    def radial(edge_len_emb):
        return net(edge_len_emb)

    return radial, [(torch.randn(e, 8),) for e in (10, 17, 25)]
