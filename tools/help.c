/* The help of every `weft` command (see help.h).  A flag added to a
 * command's parser gets its line here too; tests/test_cli.py fails until
 * it has one. */
#include "tools/help.h"

#include <string.h>

/* Where a session's options come from when a flag leaves them unset. */
#define DEVICES_DEFAULT "$WEFT_DEVICES, else every device"

/* The options of tools/model_open.c, which every command that reads a
 * model file takes. */
#define FORMAT_FLAG                                                         \
  {"--format", "weft|onnx|graphdef",                                        \
   "the model file's format: a weft bundle or graph file, an ONNX model, "  \
   "a TensorFlow GraphDef",                                                 \
   "by the file: a directory or other file is weft, *.onnx onnx, *.pb "     \
   "graphdef"}
#define GRAPHDEF_OUTPUT_FLAG                                                \
  {"--graphdef-output", "NODE",                                             \
   "a GraphDef's output node, for its signature; repeat for more",          \
   "every node whose outputs nothing reads"}
#define SIGNATURE_FLAG                                                      \
  {"--signature", "NAME", "the model's signature to use",                   \
   "serving_default, else the model's only signature"}

static const help_flag kNoFlags[] = {{NULL, NULL, NULL, NULL}};

static const help_flag kDevicesFlags[] = {
    {"--json", NULL,
     "one JSON document (search path, plugins, refused and shadowed "
     "plugins, devices) instead of text",
     "off"},
    {"--cluster", NULL,
     "under mpirun: every task's devices, gathered to rank 0", "off"},
    {NULL, NULL, NULL, NULL}};

static const help_flag kOpsFlags[] = {
    {"--json", NULL,
     "one JSON document: every op's inputs, outputs, attributes, summary, "
     "origin, whether it is stateful or runs in the runtime, and its "
     "kernels per plugin with device type and dtypes",
     "off"},
    {NULL, NULL, NULL, NULL}};

static const help_flag kExportFlags[] = {
    SIGNATURE_FLAG, FORMAT_FLAG, GRAPHDEF_OUTPUT_FLAG,
    {NULL, NULL, NULL, NULL}};

/* No --signature: inspect shows every signature. */
static const help_flag kInspectFlags[] = {
    {"--json", NULL, "one JSON document instead of text", "off"},
    FORMAT_FLAG, GRAPHDEF_OUTPUT_FLAG, {NULL, NULL, NULL, NULL}};

static const help_flag kRunFlags[] = {
    {"--feed", "KEY=FILE.npy",
     "the signature's input KEY from a .npy file; one per input", NULL},
    {"--fetch", "KEY[=OUT.npy]",
     "an output of the signature to compute: written to OUT.npy, or "
     "printed; repeat for more",
     "every output, printed"},
    {"--devices", "LIST", "the devices the session may use, e.g. CPU or "
     "/device:OPENCL:0,CPU", DEVICES_DEFAULT},
    SIGNATURE_FLAG, FORMAT_FLAG, GRAPHDEF_OUTPUT_FLAG,
    {NULL, NULL, NULL, NULL}};

static const help_flag kPlaceFlags[] = {
    {"--devices", "LIST", "the devices the session may use, e.g. CPU or "
     "/device:OPENCL:0,CPU", DEVICES_DEFAULT},
    {"--gflops", "PATTERN=N,...",
     "compute estimates for the placer, e.g. OPENCL=500,CPU=50",
     "$WEFT_DEVICE_GFLOPS, else the plugins' estimates"},
    {"--constrain", "DEVICE",
     "the built-in model's first MatMul asks for DEVICE", "none"},
    {"--strict", NULL,
     "a device constraint no kernel can meet is an error rather than a "
     "fallback",
     "off ($WEFT_PLACEMENT, else soft)"},
    {"--precision", "exact|bfloat16|float16",
     "the dtype float32 values take when they cross devices",
     "$WEFT_TRANSFER_PRECISION, else exact"},
    {"--no-optimize", NULL,
     "place the graph as built: no constant folding, common subexpressions "
     "or fusion",
     "off"},
    {"--batch", "N",
     "the built-in model's batch; for a MODEL, the size of every unknown "
     "dimension of its inputs",
     "64; 1 with a MODEL"},
    {"--hidden", "N", "the built-in model's hidden units", "256"},
    {"--train", NULL,
     "place the built-in model's training step (variables, cross-entropy, "
     "Adam) instead of its inference",
     "off"},
    {"--json", NULL,
     "the run metadata as one JSON document: every node with op, device, "
     "reason and frame; transfers; merged, fused and recomputed nodes; "
     "in-place updates; devices with peak bytes; intra-op threads",
     "off"},
    SIGNATURE_FLAG, FORMAT_FLAG, GRAPHDEF_OUTPUT_FLAG,
    {NULL, NULL, NULL, NULL}};

static const help_flag kTrainFlags[] = {
    {"--model", "softmax|mlp|cnn|lstm",
     "softmax regression, a multilayer perceptron, a convolutional network "
     "or an LSTM over the image's rows",
     "softmax"},
    {"--epochs", "N", "passes over the training set, 1 to 1000", "2"},
    {"--steps", "N", "stop after N steps in all", "the epochs' steps"},
    {"--batch", "N", "images per step", "100; 50 for cnn"},
    {"--optimizer", "sgd|momentum|adam", "the optimizer",
     "sgd for softmax, adam for the others"},
    {"--learning-rate", "X", "the optimizer's learning rate",
     "sgd 0.5, or 0.1 for mlp; momentum 0.05; adam 0.001, or 0.002 for cnn "
     "and lstm"},
    {"--device", "LIST",
     "the devices the session may use, e.g. CPU, OPENCL:0 or "
     "/device:OPENCL:0,CPU",
     DEVICES_DEFAULT},
    {"--threads", "N",
     "the session's inter-op and intra-op threads (0: the runtime picks, "
     "up to the core count) and the input pipeline's (0: 2)",
     "0"},
    {"--seed", "N", "seed of the initial weights and the shuffling", "1"},
    {"--data", "DIR|tfrecord:FILE[,FILE...]",
     "the dataset: a directory of Fashion-MNIST's IDX files, or files of "
     "TFRecords (weft tfrecord writes them)",
     "/usr/share/datasets/fashion-mnist"},
    {"--input", "pipeline|feed",
     "pipeline: batches read and shuffled inside the graph; feed: batches "
     "fed to every step from the host",
     "pipeline"},
    {"--validation", "N",
     "hold out the last N training images and report their accuracy after "
     "each epoch",
     "0"},
    {"--checkpoint", "FILE",
     "the checkpoint: written at the end, on SIGINT/SIGTERM and with "
     "--checkpoint-every; read by --resume",
     "fashion-mnist-MODEL.ckpt"},
    {"--checkpoint-every", "N|Ns|Nm|Nh",
     "also write the checkpoint every N steps, or every N seconds, minutes "
     "or hours",
     "only at the end and on SIGINT/SIGTERM"},
    {"--keep", "K",
     "keep the newest K step-stamped checkpoints FILE-STEP, FILE a link to "
     "the newest; 1 to 1000",
     "1: the one file"},
    {"--resume", NULL,
     "continue from --checkpoint: its weights, optimizer state and step "
     "(the model, optimizer, batch and seed must match)",
     "off"},
    {"--save", "DIR",
     "the model bundle written at the end, with a serving signature",
     "fashion-mnist-MODEL-model"},
    {"--loss-log", "FILE", "every step's loss, one per line, exactly",
     "none"},
    {"--logdir", "DIR",
     "TensorBoard event files: loss per step, test and validation "
     "accuracy, learning rate, weight histograms per epoch, test images, "
     "the run's configuration and the graph",
     "none"},
    {"--trace", "FILE",
     "a Chrome trace (chrome://tracing, Perfetto) of the first training "
     "step the process runs (after --resume, the first after the "
     "checkpoint's)",
     "none"},
    {"--explain", NULL, "print where the first step's nodes went and why",
     "off"},
    {"--data-parallel", NULL,
     "under mpirun: each rank its shard of every batch, gradients averaged "
     "over the ranks (synchronous)",
     "off"},
    {"--bucket-bytes", "N",
     "with --data-parallel: gradients averaged in buckets of N bytes (0: "
     "one AllReduce each)",
     "0"},
    {"--parameter-server", NULL,
     "under mpirun: rank 0 holds the variables and serves them, the other "
     "ranks train asynchronously, each its share of the batches",
     "off"},
    {"--step-timeout", "SECONDS",
     "fail a step that takes longer (0: no limit)",
     "0; 300 with --data-parallel or --parameter-server"},
    {NULL, NULL, NULL, NULL}};

static const help_flag kTfrecordFlags[] = {
    {"--split", "train|t10k", "the split to write", "train"},
    {"--data", "DIR", "the directory of Fashion-MNIST's IDX files",
     "/usr/share/datasets/fashion-mnist"},
    {NULL, NULL, NULL, NULL}};

static const help_flag kConformanceFlags[] = {
    {"--op", "OP", "check only this op's kernels", "every op"},
    {"--json", NULL, "the results as one JSON document", "off"},
    {"--table-child", "OP",
     "internal: the child process that checks the plugin's table (the "
     "command starts it itself)",
     NULL},
    {NULL, NULL, NULL, NULL}};

static const help_command kCommands[] = {
    {"version", "library, user-API and plugin-interface versions", "",
     kNoFlags},
    {"devices",
     "plugins found, refused ones and why, shadowed copies, devices and "
     "properties",
     "[options] [PLUGIN_FILE...]", kDevicesFlags},
    {"ops",
     "every op: inputs, outputs, attributes, where it comes from, kernels "
     "per plugin",
     "[options] [PLUGIN_FILE...] [OP...]", kOpsFlags},
    {"export", "write a model's signature as an ONNX model",
     "MODEL OUT.onnx [options]", kExportFlags},
    {"inspect",
     "a model file's format, signatures, ops and parameter count",
     "MODEL [options]", kInspectFlags},
    {"run", "run a model file's signature on .npy inputs",
     "MODEL --feed KEY=FILE.npy ... [options]", kRunFlags},
    {"place", "where a model's nodes go on these devices, and why",
     "[MODEL] [options]", kPlaceFlags},
    {"train", "train a model: the main job", "fashion-mnist [options]",
     kTrainFlags},
    {"tfrecord",
     "write a dataset as TFRecord files of tf.train.Example records (image "
     "bytes, int64 label)",
     "fashion-mnist OUT.tfrecord[.gz|.zz] [options]", kTfrecordFlags},
    {"conformance",
     "check a plugin's kernels against the CPU's, and its memory, stream "
     "and event contract",
     "PLUGIN_FILE [options]", kConformanceFlags},
};

size_t help_command_count(void) {
  return sizeof kCommands / sizeof kCommands[0];
}

const help_command* help_command_at(size_t index) {
  return index < help_command_count() ? &kCommands[index] : NULL;
}

const help_command* help_find(const char* name) {
  for (size_t i = 0; i < help_command_count(); ++i)
    if (strcmp(kCommands[i].name, name) == 0) return &kCommands[i];
  return NULL;
}

/* `text` in lines of at most 78 columns, each indented by `indent`. */
static void print_wrapped(FILE* out, const char* text, int indent) {
  enum { kWidth = 78 };
  int column = 0;
  while (*text) {
    size_t word = strcspn(text, " ");
    if (column > indent && column + 1 + (int)word > kWidth) {
      fputc('\n', out);
      column = 0;
    }
    if (column == 0) {
      column = fprintf(out, "%*s", indent, "");
    } else {
      column += fprintf(out, " ");
    }
    column += fprintf(out, "%.*s", (int)word, text);
    text += word;
    while (*text == ' ') ++text;
  }
  fputc('\n', out);
}

void help_print(FILE* out, const help_command* command) {
  fprintf(out, "usage: weft %s%s%s\n\n%s.\n\noptions:\n", command->name,
          command->usage[0] ? " " : "", command->usage, command->summary);
  for (const help_flag* f = command->flags; f->flag != NULL; ++f) {
    fprintf(out, "  %s%s%s\n", f->flag, f->argument ? " " : "",
            f->argument ? f->argument : "");
    char text[1024];
    if (f->default_value != NULL) {
      snprintf(text, sizeof text, "%s (default: %s)", f->description,
               f->default_value);
    } else {
      snprintf(text, sizeof text, "%s (no default)", f->description);
    }
    print_wrapped(out, text, 6);
  }
  fprintf(out, "  -h, --help\n      this help (default: off)\n");
}
