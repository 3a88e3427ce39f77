/*
 * Models and the backends that train them.
 *
 * A model is a flat list of layers parsed from a small spec (grammar in
 * rv-train-gpu(1), MODEL SPEC; parser in nn_spec.c), with every shape
 * inferred from the stream's input shape.  All of a model's trainable
 * numbers live in one flat float array, its buffers (batch-norm running
 * statistics) in another, in the canonical order below.  Checkpoints,
 * initialisation and the backends share that order, so a checkpoint made
 * on one backend loads on another.
 *
 * A backend (CPU here, CUDA in nn_cuda.cu) trains a whole model: it owns
 * its activations, gradients and optimiser state and is driven one batch
 * at a time through struct rv_nn_ops.  The interface is model-level, not
 * layer-level, so each backend can lay out, fuse and schedule as it likes.
 *
 * Canonical parameter order, layer by layer:
 *   CONV    weight [out][in.c][k][k], then bias [out] if bias
 *   BN      gamma [c], beta [c];            buffers: mean [c], var [c]
 *   LINEAR  weight [out][in.c * in.h * in.w] (input flattened c, h, w as
 *           PyTorch flattens NCHW), then bias [out] if bias
 *   ADD     if proj: shortcut conv weight [out.c][res.in.c][1][1] (no
 *           bias), then shortcut bn gamma [out.c], beta [out.c];
 *           buffers: shortcut bn mean [out.c], var [out.c]
 *   others  nothing
 * These are exactly PyTorch's parameter shapes and state_dict order for
 * the same architecture, so weights can be carried over by position.
 */
#ifndef RV_NN_H
#define RV_NN_H

#include <stddef.h>
#include <stdint.h>

enum rv_layer_kind {
	RV_LAYER_CONV = 1,	/* out, k, stride, pad, bias */
	RV_LAYER_BN,		/* batch norm over channels (features when
				 * h = w = 1, as BatchNorm1d) */
	RV_LAYER_RELU,
	RV_LAYER_MAXPOOL,	/* k, stride, pad (pads with -inf) */
	RV_LAYER_AVGPOOL,	/* k, stride, pad (pads count, as torch's
				 * count_include_pad=True) */
	RV_LAYER_GAP,		/* global average pool: c x 1 x 1 */
	RV_LAYER_LINEAR,	/* out, bias; flattens its input */
	RV_LAYER_DROPOUT,	/* p; inverted dropout, train mode only */
	RV_LAYER_RES,		/* opens a residual block: keeps its input */
	RV_LAYER_ADD,		/* closes it: adds the (projected) input */
};

/* Batch norm on every backend: torch's epsilon and momentum. */
#define RV_BN_EPS 1e-5
#define RV_BN_MOMENTUM 0.1

/* Spatial pools and convolutions: out = floor((in + 2 pad - k) / stride) + 1 */
struct rv_shape {
	int c, h, w;
};

struct rv_layer {
	enum rv_layer_kind kind;
	int out;		/* CONV: channels; LINEAR: features */
	int k, stride, pad;	/* CONV, MAXPOOL, AVGPOOL */
	int bias;		/* CONV, LINEAR: 1 if it has a bias */
	float p;		/* DROPOUT: probability of zeroing */
	int res;		/* ADD: index of its RES layer */
	int proj;		/* ADD: 1 if the shortcut is conv1x1 + bn
				 * (shapes differ), 0 for identity */
	int proj_stride;	/* ADD with proj: the 1x1 conv's stride */
	struct rv_shape in;	/* input shape */
	struct rv_shape outs;	/* output shape */
	size_t param_off;	/* first of its trainable numbers */
	size_t nparam;		/* how many */
	size_t buf_off;		/* first of its buffers */
	size_t nbuf;		/* how many */
};

/* Values of a tensor of shape s, and of one of its planes. */
static inline size_t
rv_shape_len(struct rv_shape s)
{
	return (size_t)s.c * s.h * s.w;
}

static inline size_t
rv_shape_hw(struct rv_shape s)
{
	return (size_t)s.h * s.w;
}

/* Floats of a CONV or LINEAR layer's weight (its bias follows). */
static inline size_t
rv_layer_wlen(const struct rv_layer *ly)
{
	if (ly->kind == RV_LAYER_CONV)
		return (size_t)ly->out * ly->in.c * ly->k * ly->k;
	return (size_t)ly->out * rv_shape_len(ly->in);
}

/*
 * Whether backward computes a gradient for layer ly's output, din being
 * whether it does for the layer before: layers with parameters always,
 * a projecting ADD always (its shortcut has parameters), others when
 * something below them needs it.
 */
static inline int
rv_layer_needg(const struct rv_layer *ly, int din)
{
	switch (ly->kind) {
	case RV_LAYER_CONV:
	case RV_LAYER_BN:
	case RV_LAYER_LINEAR:
		return 1;
	case RV_LAYER_ADD:
		return din || ly->proj;
	default:
		return din;
	}
}

struct rv_net {
	int nlayers;
	struct rv_layer *layers;	/* owned */
	struct rv_shape in;		/* input c, h, w */
	int classes;			/* the last layer's out */
	size_t nparams;			/* trainable floats */
	size_t nbufs;			/* buffer floats */
	char *spec;			/* owned: the spec, normalised (every
					 * argument explicit), reparseable */
};

/*
 * Parse spec (or a preset's name: mlp, cnn-small, resnet20, resnet18,
 * resnet50) for input shape in and `classes` classes; fills net.  The
 * last layer must be LINEAR; a LINEAR without out= gets `classes`.
 * Returns 0, or -1 with rv_errmsg() "model spec: near 'TOKEN': reason".
 */
int rv_net_parse(struct rv_net *net, const char *spec, struct rv_shape in,
    int classes);
void rv_net_release(struct rv_net *net);
/* The preset's spec text, or NULL if name is no preset. */
const char *rv_net_preset(const char *name);
/* The preset names, NULL-terminated (for --list-models). */
const char *const *rv_net_presets(void);
/* Multiply-accumulates of one forward pass of one sample. */
uint64_t rv_net_macs(const struct rv_net *net);
/* Human-readable layer table (one line a layer) into buf; for -v. */
void rv_net_describe(const struct rv_net *net, char *buf, size_t len);

/*
 * PyTorch's default initialisation, keyed by seed: CONV and LINEAR
 * weights and biases uniform in +-1/sqrt(fan_in) (kaiming_uniform with
 * a = sqrt 5), BN gamma 1, beta 0, running mean 0, var 1.  Draws come
 * from rv_rng (RV_STAGE_TRAIN, op = layer index, epoch 0, id 0), so the
 * same seed gives the same model on every backend and thread count.
 */
void rv_net_init(const struct rv_net *net, uint64_t seed, float *params,
    float *bufs);

/* ---- Backends ---------------------------------------------------------- */

/*
 * CUDA arithmetic.  FP32: fp32 everywhere, no tensor-core shortcuts.
 * TF32: fp32 tensors, convolutions and GEMMs on tensor cores with 10-bit
 * mantissas (PyTorch's default for convolutions).  BF16: bf16 activations
 * and weight copies, fp32 accumulation, fp32 master weights, batch-norm
 * statistics and optimiser; channels-last (NHWC) layout.
 */
enum rv_precision {
	RV_PREC_FP32 = 0,
	RV_PREC_TF32,
	RV_PREC_BF16,
};

/* "fp32", "tf32", "bf16": the names --precision takes. */
static inline const char *
rv_precision_name(enum rv_precision p)
{
	return p == RV_PREC_BF16 ? "bf16" : p == RV_PREC_TF32 ? "tf32" :
	    "fp32";
}

struct rv_nn_config {
	const struct rv_net *net;
	int batch_max;		/* largest batch that will be passed */
	int threads;		/* CPU threads, >= 1 */
	uint64_t seed;		/* keys dropout */
	float mean[4];		/* per channel, in [0, 1] units: the input */
	float std[4];		/* is (pixel / 255 - mean) / std */
	float label_smoothing;	/* of the loss eval() reports; train()
				 * takes its own from struct rv_nn_hyper */
	int device;		/* CUDA: device ordinal */
	enum rv_precision precision;	/* CUDA; the CPU is always fp32 */
	int async;		/* the caller calls ops->wait (see there) */
	int tune;		/* CUDA: time the convolution algorithms and
				 * keep the fastest (else cuDNN's heuristic
				 * choice, the same on every run) */
};

/* One batch as it comes off the stream; everything borrowed. */
struct rv_nn_batch {
	int n;			/* samples, 1 .. batch_max */
	const uint8_t *pixels;	/* n x h x w x c, u8, HWC per sample */
	const uint64_t *ids;	/* key dropout masks */
	const int32_t *labels;	/* in [0, classes) */
	const float *weights;	/* per-sample loss weights */
	uint64_t step;		/* global step: keys dropout masks */
};

/* SGD as torch.optim.SGD (dampening 0), weight decay on every parameter. */
struct rv_nn_hyper {
	float lr;
	float momentum;
	float weight_decay;
	float label_smoothing;	/* in [0, 1) */
	int nesterov;
};

/* Per-sample results, arrays of n the caller owns; any may be NULL. */
struct rv_nn_out {
	float *loss;		/* cross-entropy (with smoothing), unweighted */
	float *gradnorm;	/* train only: the norm of this sample's own
				 * gradient of the last linear layer's
				 * weight and bias, from forward quantities:
				 * ||softmax(z) - q|| * sqrt(||h||^2 + 1),
				 * q the (smoothed) target, h the layer's
				 * input (bias-less: without the + 1) */
	int32_t *pred;		/* argmax of the logits */
};

/*
 * The objective of one training step is (1/n) sum_i w_i loss_i: with
 * weights 1/P(keep) from rv-score --reweight it is an unbiased estimate of
 * the mean loss over all samples, kept or not.  train() runs forward
 * (batch norm in train mode, dropout on), backward and one SGD update;
 * eval() runs forward only (running statistics, no dropout) and changes
 * nothing.  Both return 0, or -1 with rv_errmsg() set.
 */
struct rv_nn_ops {
	const char *name;	/* "cpu", "cuda" */
	/* NULL with rv_errmsg() set on failure (no device, no memory). */
	void *(*create)(const struct rv_nn_config *cfg);
	void (*destroy)(void *be);
	int (*train)(void *be, const struct rv_nn_batch *b,
	    const struct rv_nn_hyper *h, struct rv_nn_out *out);
	int (*eval)(void *be, const struct rv_nn_batch *b,
	    struct rv_nn_out *out);
	/* Copy the state out or in, in canonical order: net->nparams
	 * parameters, as many momentum values, net->nbufs buffers; a NULL
	 * part is skipped. */
	int (*get_state)(void *be, float *params, float *momentum,
	    float *bufs);
	int (*set_state)(void *be, const float *params,
	    const float *momentum, const float *bufs);
	/*
	 * NULL for a backend whose train() finishes before it returns.
	 * Otherwise, when the config's async was set, train() may return
	 * once the step is queued, its out arrays (which must stay valid)
	 * filled later: wait(be, keep) returns once at most `keep` steps
	 * are still in flight, every earlier step's out arrays filled, or
	 * -1 with rv_errmsg() set when one failed.  eval(), get_state() and
	 * set_state() wait for every step first.  Without async, train()
	 * waits for its own step.
	 */
	int (*wait)(void *be, int keep);
	/* NULL, or a line naming the device ("NVIDIA H200, bf16"). */
	const char *(*describe)(void *be);
};

/*
 * What every backend checks of a batch before a step: 1 to batch_max
 * samples, pixels and labels present, labels in [0, classes); and to
 * train, ids when the model has dropout and at least 2 values a channel
 * for every batch norm.  Messages start with who ("cpu", "cuda").
 * Returns 0, or -1 with rv_errmsg() set.
 */
int rv_nn_check_batch(const struct rv_net *net, int batch_max,
    const struct rv_nn_batch *b, int train, const char *who);

/*
 * The parser's invariants the backends rely on: the last layer linear
 * with one output a class, 1 to 4 input channels, every layer's shapes
 * and parameter and buffer counts consistent.  Messages start with who.
 * 0, or -1 with rv_errmsg() set.
 */
int rv_nn_check_net(const struct rv_net *net, const char *who);
/* A config's per-channel mean and std usable (finite, std > 0)?  0, or
 * -1 with rv_errmsg() "WHO: channel C: bad mean M or std S". */
int rv_nn_check_norm(const struct rv_nn_config *cfg, const char *who);
/* dst: src's layers (allocated; free dst->layers) and counts, no spec.
 * 0, or -1 when out of memory. */
int rv_net_copy(struct rv_net *dst, const struct rv_net *src);

extern const struct rv_nn_ops rv_nn_cpu;
/*
 * The CUDA backend, from the plugin librv-cuda.so next to the program
 * (nn_cuda_load.c), which each call opens (dlopen: the same handle after
 * the first, never closed); thread-safe.  NULL with rv_errmsg() set when
 * rv was built without it ("this rv was built without CUDA (CUDA=0 or no
 * nvcc)") or the plugin cannot be loaded ("cannot load the CUDA backend:
 * REASON", REASON dlerror()'s, e.g. a missing libcudnn).  Returns the
 * backend even without a device: its create() then fails.
 */
const struct rv_nn_ops *rv_nn_cuda(void);
/*
 * Number of CUDA devices present, or 0 with rv_errmsg() saying why: not
 * built or the plugin not loadable (as rv_nn_cuda()), or "no CUDA device
 * found".  Where no NVIDIA driver is installed (no libcuda.so.1) it says
 * so at once, without opening the plugin.
 */
int rv_nn_cuda_devices(void);

#endif
