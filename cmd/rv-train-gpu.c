/*
 * rv-train-gpu: train an image classifier on a stream of u8 batches, on
 * CUDA when it is built and a device is present, else on the CPU, and
 * report every trained sample's loss and gradient norm on a feedback FIFO
 * for rv-score.  Options and wiring only: the loop is lib/train/train.c, the
 * backends lib/nn/nn_cpu.c and lib/nn/nn_cuda.cu (the plugin librv-cuda.so,
 * opened by lib/nn/nn_cuda_load.c).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "nn/nn.h"
#include "stream/batch.h"
#include "train/train.h"

static const char usage[] =
    "usage: rv-train-gpu [-qv] [-j N] [-o FILE] [-m MODEL] [-b N]\n"
    "                    [--device auto|cpu|cuda[:N]] [--precision P]\n"
    "                    [--autotune] [--lr LR] [--momentum M]\n"
    "                    [--nesterov] [--wd WD] [--label-smoothing E]\n"
    "                    [--schedule const|step|cosine|linear]\n"
    "                    [--epochs E | --steps N] [--step-size E]\n"
    "                    [--gamma G] [--warmup N]\n"
    "                    [--mean M[,M ...]] [--std S[,S ...]] [--classes N]\n"
    "                    [--eval FILE] [--eval-every N] [--no-epoch-eval]\n"
    "                    [--target-acc A]\n"
    "                    [--feedback PATH] [--feedback-queue N]\n"
    "                    [--log FILE] [--log-every N] [--save FILE]\n"
    "                    [--save-every N] [--resume FILE] [--max-steps N]\n"
    "                    [--seed S] [--list-models] [file ...]\n"
    "  -m, --model MODEL       preset or layer spec (default cnn-small)\n"
    "  -b, --batch N           batch size for sample input and evaluation\n"
    "                          (default " RV_BATCH_DEFAULT_STR
    "; batch records keep theirs, up to\n"
    "                          65536 samples)\n"
    "  -o, --output FILE       write the summary to FILE (default stdout)\n"
    "      --device D          auto (default), cpu, cuda or cuda:N\n"
    "      --precision P       CUDA: fp32 (default), tf32 or bf16\n"
    "      --autotune          CUDA: time cuDNN's algorithms, keep the fastest\n"
    "                          (runs may then differ in the last bits)\n"
    "      --lr LR             base learning rate (default 0.05)\n"
    "      --momentum M        SGD momentum (default 0.9)\n"
    "      --nesterov          Nesterov momentum\n"
    "      --wd WD             weight decay (default 5e-4)\n"
    "      --label-smoothing E label smoothing, 0 <= E < 1 (default 0)\n"
    "      --schedule S        const (default), step, cosine or linear\n"
    "      --epochs E          cosine, linear: the length in epochs\n"
    "      --steps N           train N steps, every schedule fitted to\n"
    "                          them: cosine and linear reach 0 at N,\n"
    "                          step decays at N/3 and 2N/3\n"
    "      --step-size E       step: epochs between decays (default 30;\n"
    "                          with --steps, steps, default N/3)\n"
    "      --gamma G           step: decay factor (default 0.1)\n"
    "      --warmup N          linear warm-up over the first N steps\n"
    "      --mean M[,M ...]    mean of the pixels scaled to [0,1]: one\n"
    "                          for all channels or one per channel\n"
    "                          (default: the stream's, else 0.5)\n"
    "      --std S[,S ...]     standard deviation, above 0, the same way\n"
    "      --classes N         classes (default: the stream's metadata)\n"
    "      --eval FILE         evaluate on FILE at every epoch end\n"
    "      --eval-every N      and every N steps\n"
    "      --no-epoch-eval     with --eval-every: not at epoch ends\n"
    "      --target-acc A      stop once evaluation accuracy >= A\n"
    "      --feedback PATH     per-sample feedback lines to PATH (FIFO\n"
    "                          or file), see rv-feedback(5)\n"
    "      --feedback-queue N  lines held while the reader is slow\n"
    "                          (default 65536)\n"
    "      --log FILE          metrics as JSON lines to FILE\n"
    "      --log-every N       a step line every N steps (default 50)\n"
    "      --save FILE         checkpoint to FILE at epoch ends, the end\n"
    "      --save-every N      and every N steps\n"
    "      --resume FILE       continue from a checkpoint\n"
    "      --max-steps N       stop after N steps\n"
    "      --seed S            seed for initialisation and dropout\n"
    "      --list-models       print the model presets and exit\n"
    "  -j, --jobs N            CPU threads (default: all cores)\n"
    "      --level L           accepted, no effect\n"
    "  -q, --quiet             no progress, no notices\n"
    "  -v, --verbose           the model, every epoch and evaluation\n"
    "  -h, --help              print this help\n"
    "  -V, --version           print the version\n";

enum {
	OPT_DEVICE = RV_OPT_FIRST_PRIVATE,
	OPT_PRECISION, OPT_AUTOTUNE,
	OPT_LR, OPT_MOMENTUM, OPT_NESTEROV, OPT_WD, OPT_SMOOTH,
	OPT_SCHEDULE, OPT_EPOCHS, OPT_STEPS, OPT_STEP_SIZE, OPT_GAMMA,
	OPT_WARMUP,
	OPT_MEAN, OPT_STD, OPT_CLASSES, OPT_EVAL, OPT_EVAL_EVERY,
	OPT_NO_EPOCH_EVAL,
	OPT_TARGET, OPT_FEEDBACK, OPT_FB_QUEUE, OPT_LOG, OPT_LOG_EVERY,
	OPT_SAVE, OPT_SAVE_EVERY, OPT_RESUME, OPT_MAX_STEPS, OPT_LIST,
};

struct opts {
	struct rv_common c;
	struct rv_train_conf t;
	const char *device;
};

/*
 * --mean and --std: one number for every channel, or one per channel (a
 * model takes 1 to 4), separated by commas, each in [0, hi], or (0, hi]
 * when positive.  Anything else is a usage error; whether the count fits
 * the stream's channels is checked at its first batch (lib/train/train.c).
 */
static int
parse_list(const char *opt, const char *s, float *v, int positive, double hi)
{
	char buf[128], *p, *q;
	double d;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		rv_usage_die(usage, "%s: '%s': too long", opt, s);
	memcpy(buf, s, strlen(s) + 1);
	for (p = buf; p != NULL; p = q) {
		if ((q = strchr(p, ',')) != NULL)
			*q++ = '\0';
		if (n == 4 || rv_parse_f64(p, 0, hi, &d) < 0 ||
		    (positive && (float)d <= 0))
			rv_usage_die(usage, "%s: '%s': want 1 to 4 numbers "
			    "in %c0, %g], separated by commas", opt, s,
			    positive ? '(' : '[', hi);
		v[n++] = (float)d;
	}
	return n;
}

static void
list_models(void)
{
	const char *const *p;

	for (p = rv_net_presets(); *p != NULL; p++)
		printf("%-10s %s\n", *p, rv_net_preset(*p));
	exit(0);
}

/*
 * Shapes come with the first batch, but a spec that fits none of the
 * common inputs is a typo: say so now, as a usage error, rather than
 * after upstream has produced a batch.
 */
static void
check_model(const char *spec)
{
	static const struct rv_shape shapes[] = {
		{ 1, 28, 28 }, { 3, 32, 32 }, { 3, 224, 224 },
	};
	char first[512];
	struct rv_net net;
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (rv_net_parse(&net, spec, shapes[i], 10) == 0) {
			rv_net_release(&net);
			return;
		}
		if (i == 0)
			snprintf(first, sizeof(first), "%s", rv_errmsg());
	}
	rv_usage_die(usage, "--model: %s", first);
}

static void
parse_args(int argc, char *argv[], struct opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		{ "model", required_argument, NULL, 'm' },
		{ "batch", required_argument, NULL, 'b' },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "precision", required_argument, NULL, OPT_PRECISION },
		{ "autotune", no_argument, NULL, OPT_AUTOTUNE },
		{ "lr", required_argument, NULL, OPT_LR },
		{ "momentum", required_argument, NULL, OPT_MOMENTUM },
		{ "nesterov", no_argument, NULL, OPT_NESTEROV },
		{ "wd", required_argument, NULL, OPT_WD },
		{ "label-smoothing", required_argument, NULL, OPT_SMOOTH },
		{ "schedule", required_argument, NULL, OPT_SCHEDULE },
		{ "epochs", required_argument, NULL, OPT_EPOCHS },
		{ "steps", required_argument, NULL, OPT_STEPS },
		{ "step-size", required_argument, NULL, OPT_STEP_SIZE },
		{ "gamma", required_argument, NULL, OPT_GAMMA },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "mean", required_argument, NULL, OPT_MEAN },
		{ "std", required_argument, NULL, OPT_STD },
		{ "classes", required_argument, NULL, OPT_CLASSES },
		{ "eval", required_argument, NULL, OPT_EVAL },
		{ "eval-every", required_argument, NULL, OPT_EVAL_EVERY },
		{ "no-epoch-eval", no_argument, NULL, OPT_NO_EPOCH_EVAL },
		{ "target-acc", required_argument, NULL, OPT_TARGET },
		{ "feedback", required_argument, NULL, OPT_FEEDBACK },
		{ "feedback-queue", required_argument, NULL, OPT_FB_QUEUE },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "log-every", required_argument, NULL, OPT_LOG_EVERY },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "save-every", required_argument, NULL, OPT_SAVE_EVERY },
		{ "resume", required_argument, NULL, OPT_RESUME },
		{ "max-steps", required_argument, NULL, OPT_MAX_STEPS },
		{ "list-models", no_argument, NULL, OPT_LIST },
		{ NULL, 0, NULL, 0 }
	};
	struct rv_train_conf *t = &o->t;
	int ch, prec;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	o->device = "auto";
	t->model = "cnn-small";
	t->batch = RV_BATCH_DEFAULT;
	t->hyper.lr = 0.05f;
	t->hyper.momentum = 0.9f;
	t->hyper.weight_decay = 5e-4f;
	t->gamma = 0.1;
	t->target_acc = -1;
	t->feedback_queue = 1u << 16;
	t->log_every = 50;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS "m:b:",
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case 'm':
			t->model = optarg;
			break;
		case 'b':
			t->batch = (uint32_t)rv_opt_u64("-b", optarg, 1,
			    RV_TRAIN_BATCH_MAX, usage);
			break;
		case OPT_DEVICE:
			if (strncmp(optarg, "cuda:", 5) == 0) {
				t->device = (int)rv_opt_u64("--device cuda:N",
				    optarg + 5, 0, 1023, usage);
				o->device = "cuda";
				break;
			}
			if (strcmp(optarg, "auto") != 0 &&
			    strcmp(optarg, "cpu") != 0 &&
			    strcmp(optarg, "cuda") != 0)
				rv_usage_die(usage, "--device: '%s': want "
				    "auto, cpu or cuda", optarg);
			o->device = optarg;
			break;
		case OPT_PRECISION:
			for (prec = RV_PREC_FP32; prec <= RV_PREC_BF16; prec++)
				if (strcmp(optarg, rv_precision_name(
				    (enum rv_precision)prec)) == 0)
					break;
			if (prec > RV_PREC_BF16)
				rv_usage_die(usage, "--precision: '%s': want "
				    "fp32, tf32 or bf16", optarg);
			t->precision = (enum rv_precision)prec;
			break;
		case OPT_AUTOTUNE:
			t->autotune = 1;
			break;
		case OPT_LR:
			t->hyper.lr = (float)rv_opt_f64("--lr", optarg, 0, 100,
			    usage);
			break;
		case OPT_MOMENTUM:
			t->hyper.momentum = (float)rv_opt_f64("--momentum",
			    optarg, 0, 0.999999, usage);
			break;
		case OPT_NESTEROV:
			t->hyper.nesterov = 1;
			break;
		case OPT_WD:
			t->hyper.weight_decay = (float)rv_opt_f64("--wd",
			    optarg, 0, 1, usage);
			break;
		case OPT_SMOOTH:
			t->hyper.label_smoothing = (float)rv_opt_f64(
			    "--label-smoothing", optarg, 0, 0.999, usage);
			break;
		case OPT_SCHEDULE:
			if (strcmp(optarg, "const") == 0)
				t->sched = RV_SCHED_CONST;
			else if (strcmp(optarg, "step") == 0)
				t->sched = RV_SCHED_STEP;
			else if (strcmp(optarg, "cosine") == 0)
				t->sched = RV_SCHED_COSINE;
			else if (strcmp(optarg, "linear") == 0)
				t->sched = RV_SCHED_LINEAR;
			else
				rv_usage_die(usage, "--schedule: '%s': want "
				    "const, step, cosine or linear", optarg);
			break;
		case OPT_EPOCHS:
			t->epochs = rv_opt_f64("--epochs", optarg, 1e-3, 1e6,
			    usage);
			break;
		case OPT_STEPS:
			t->steps = rv_opt_u64("--steps", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_STEP_SIZE:
			t->step_size = rv_opt_f64("--step-size", optarg, 1e-3,
			    1e12, usage);
			break;
		case OPT_GAMMA:
			t->gamma = rv_opt_f64("--gamma", optarg, 0, 1, usage);
			break;
		case OPT_WARMUP:
			t->warmup = rv_opt_u64("--warmup", optarg, 0,
			    UINT64_MAX, usage);
			break;
		case OPT_MEAN:
			t->nmean = parse_list("--mean", optarg, t->mean, 0, 1);
			break;
		case OPT_STD:
			t->nstd = parse_list("--std", optarg, t->std, 1, 1e3);
			break;
		case OPT_CLASSES:
			t->classes = (int)rv_opt_u64("--classes", optarg, 2,
			    65536, usage);
			break;
		case OPT_EVAL:
			t->eval_path = optarg;
			break;
		case OPT_NO_EPOCH_EVAL:
			t->no_epoch_eval = 1;
			break;
		case OPT_EVAL_EVERY:
			t->eval_every = rv_opt_u64("--eval-every", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_TARGET:
			t->target_acc = rv_opt_f64("--target-acc", optarg, 0,
			    1, usage);
			break;
		case OPT_FEEDBACK:
			t->feedback_path = optarg;
			break;
		case OPT_FB_QUEUE:
			t->feedback_queue = (size_t)rv_opt_u64(
			    "--feedback-queue", optarg, 1, 1 << 24, usage);
			break;
		case OPT_LOG:
			t->log_path = optarg;
			break;
		case OPT_LOG_EVERY:
			t->log_every = rv_opt_u64("--log-every", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_SAVE:
			t->save_path = optarg;
			break;
		case OPT_SAVE_EVERY:
			t->save_every = rv_opt_u64("--save-every", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_RESUME:
			t->resume_path = optarg;
			break;
		case OPT_MAX_STEPS:
			t->max_steps = rv_opt_u64("--max-steps", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_LIST:
			list_models();
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	if (t->steps > 0 && t->epochs > 0)
		rv_usage_die(usage, "--steps and --epochs: give the schedule's "
		    "length once, in steps or in epochs");
	if ((t->sched == RV_SCHED_COSINE || t->sched == RV_SCHED_LINEAR) &&
	    t->epochs == 0 && t->steps == 0)
		rv_usage_die(usage, "--schedule %s needs --epochs E or "
		    "--steps N (the length it decays to 0 over)",
		    t->sched == RV_SCHED_COSINE ? "cosine" : "linear");
	/* the step schedule's period: 30 epochs, or a third of a step
	 * budget (rv_train_lr) */
	if (t->step_size == 0 && t->steps == 0)
		t->step_size = 30;
	if (t->target_acc >= 0 && t->eval_path == NULL)
		rv_usage_die(usage, "--target-acc needs --eval FILE");
	if (t->no_epoch_eval && t->eval_every == 0)
		rv_usage_die(usage, "--no-epoch-eval needs --eval-every N");
	if (t->eval_every > 0 && t->eval_path == NULL)
		rv_usage_die(usage, "--eval-every needs --eval FILE");
	if (t->save_every > 0 && t->save_path == NULL)
		rv_usage_die(usage, "--save-every needs --save FILE");
	t->seed = o->c.seed;
	t->quiet = o->c.quiet;
	t->verbose = o->c.verbose;
	t->threads = rv_common_jobs(&o->c);
	rv_common_operands(&o->c, argc, argv, optind);
	t->inputs = o->c.inputs;
	t->ninputs = o->c.ninputs;
	if (t->resume_path == NULL)
		check_model(t->model);
	if (strcmp(o->device, "cpu") == 0 && t->precision != RV_PREC_FP32)
		rv_usage_die(usage, "--precision %s: the CPU backend trains in "
		    "fp32 only", rv_precision_name(t->precision));
	if (strcmp(o->device, "cpu") == 0 && t->autotune)
		rv_usage_die(usage, "--autotune: the CPU backend has no "
		    "algorithms to time");
}

/*
 * --device: the backend, or exit 1 when the asked-for one is missing.
 * cpu never opens the CUDA plugin; auto and cuda only where a driver is
 * installed (rv_nn_cuda_devices), and fall back or fail with its reason.
 */
static const struct rv_nn_ops *
pick_device(const char *dev, int quiet, enum rv_precision prec)
{
	const struct rv_nn_ops *cuda;

	if (strcmp(dev, "cpu") == 0)
		return &rv_nn_cpu;
	if (rv_nn_cuda_devices() > 0 && (cuda = rv_nn_cuda()) != NULL)
		return cuda;
	if (strcmp(dev, "cuda") == 0)
		rv_die(1, "--device cuda: %s", rv_errmsg());
	if (!quiet)
		rv_warn("%s: training on the CPU%s", rv_errmsg(),
		    prec != RV_PREC_FP32 ? " in fp32" : "");
	return &rv_nn_cpu;
}

/* Set by SIGINT/SIGTERM: the loop saves a checkpoint and ends. */
static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig)
{
	stop_flag = sig;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct rv_train_result res;
	struct rv_out out;
	struct sigaction sa;
	FILE *f;
	int status = 1;

	rv_setprogname(argv[0]);
	/*
	 * libgomp threads spin 300000 turns at every barrier by default: when
	 * another process holds a core (the rest of a pipeline), -j 2 fell to
	 * 1021 samples/s on cnn-small, below -j 1's 1767.  1000 turns gave
	 * 1676 there and 3047 on an idle machine (passive: 1729 and 2962).
	 * Unless the user chose, before any OpenMP call (read once).
	 */
	if (getenv("OMP_WAIT_POLICY") == NULL && getenv("GOMP_SPINCOUNT") ==
	    NULL)
		setenv("GOMP_SPINCOUNT", "1000", 0);
	parse_args(argc, argv, &o);
	o.t.backend = pick_device(o.device, o.c.quiet, o.t.precision);
	if (o.t.backend == &rv_nn_cpu)
		o.t.precision = RV_PREC_FP32;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* the feedback FIFO: rv-feedback(5) */
	o.t.stop = &stop_flag;
	if (rv_out_open(&out, o.c.output, 0) < 0)
		rv_die(1, "%s", rv_errmsg());
	if (rv_train_run(&o.t, &res) < 0) {
		rv_warn("%s", rv_errmsg());
		rv_out_finish(&out, 0);
		return 1;
	}
	if ((f = fdopen(dup(out.fd), "w")) == NULL)
		rv_die(1, "%s: fdopen:", rv_out_name(&out));
	rv_train_summary(f, &o.t, &res);
	if (fclose(f) != 0) {
		rv_warn("%s: write:", rv_out_name(&out));
		rv_out_finish(&out, 0);
		return 1;
	}
	if (rv_out_finish(&out, 1) < 0)
		rv_die(1, "%s", rv_errmsg());
	status = res.interrupted ? 128 + (int)stop_flag : 0;
	return status;
}
