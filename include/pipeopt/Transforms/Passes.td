//===- Passes.td - pipeopt transformation passes -----------*- tablegen -*-===//
//
// Part of pipeopt. Passes are grouped by the step of the flow they implement
// (docs/Design.md §2), in order: prepare, partition, schedule (which inserts
// the communication), differentiate, verify, simulate; the lowering is in
// Conversion/Passes.td and Backend/Passes.td. Flags are prefixed `pipe-`.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TRANSFORMS_PASSES_TD
#define PIPEOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Preparation: one flat model function, weights as arguments
//===----------------------------------------------------------------------===//

def PreparePass : Pass<"pipe-prepare", "::mlir::ModuleOp"> {
  let summary = "Inline helper calls so each model function is one flat graph.";
  let description = [{
    Partitioning works on one function body. Frontends such as JAX emit
    helper functions called with `func.call` (see
    `heir_resnet_like_jax.linalg.mlir`). This pass inlines every `func.call`
    into its caller (MLIR's inliner), removes private functions that are no
    longer referenced, and canonicalizes. A module without calls is left
    unchanged. TOSA ops stay TOSA.

    Errors: a recursive call chain cannot be inlined and is reported at the
    call site; a call to an external declaration (no body) is reported too,
    since the partitioner cannot see its cost.

    Postcondition: no `func.call` remains in a function with a body.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numInlined", "num-inlined", "Number of func.call ops inlined">
  ];
}

def LiftConstantsPass : Pass<"pipe-lift-constants", "::mlir::ModuleOp"> {
  let summary = "Turn a model's float tensor constants into arguments "
                "(trainable weights), writing their values as .npy.";
  let description = [{
    Frontends often freeze weights as constants: torch-mlir's default
    export writes them as `dense_resource` blobs, TOSA exports as
    `tosa.const`. Constants are not trainable, so training needs them as
    arguments. For the model function (`function`, default: the one public
    function with a body) every `arith.constant` and `tosa.const` at the top
    level of the body whose value is a floating-point tensor, not a splat,
    with at least `min-elements` elements, becomes a new argument appended
    after the existing ones, in program order. Splats (zeros, -inf, scales)
    and small tensors stay constants.

    With `output-dir`, the value of the constant that became argument `i` is
    written to `<output-dir>/arg_<i>.npy` (C order, little-endian), so that
    a run can load it: `pipeopt-run model.so --input i=<dir>/arg_i.npy`.
    The function gets `pipe.lifted_constants = array<i64: ...>`, the indices
    of the new arguments.

    Errors: a model function that is called by another function (its
    callers would need the new arguments), a `dense_resource` whose blob is
    not in the file (elided), an element type that .npy cannot hold, an
    unwritable output file, and bad options; each leaves the module
    unchanged.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let options = [
    Option<"function", "function", "std::string", "\"\"",
           "Model function (default: the one public function with a body)">,
    Option<"minElements", "min-elements", "int64_t", "2",
           "Smallest constant (elements) that becomes an argument (>= 1)">,
    Option<"outputDir", "output-dir", "std::string", "\"\"",
           "Directory (must exist) for arg_<i>.npy; empty: write nothing">,
  ];
}

//===----------------------------------------------------------------------===//
// Partitioning: ops -> stages -> stage functions
//===----------------------------------------------------------------------===//

def PartitionPass : Pass<"pipe-partition", "::mlir::ModuleOp"> {
  let summary = "Assign every op of each model function to a pipeline stage.";
  let description = [{
    Splits the body of every `func.func` with a body (except outlined stage
    functions and stage graphs) into `num-stages` contiguous pipeline
    stages. The functions must be flat: a `func.call` is an error (run
    `pipe-prepare` first, as `pipeopt-pipeline` does).

    The pass builds a weighted DAG from the function body in program order
    (a topological order), with one node per top-level op costed by the cost
    model (`include/pipeopt/Analysis/CostModel.h`, `docs/CostModel.md`):
    forward time, and B / W times when `training` is set; FLOPs; parameter
    bytes (each weight argument or constant is attributed to its first user);
    saved-activation bytes. Edges carry the bytes of the value they transport.
    Cheap values computed only from constants, function arguments and other
    such values (constants, `tensor.empty`, fills, splats, masks, RoPE
    tables, layout ops on weights) are *rematerializable*: they are not
    placed, each stage that uses one recomputes it, and it is never sent.
    A value the function returns is always placed. When rematerialization
    would leave fewer placeable ops than `num-stages` (a model of
    element-wise ops on its inputs), only values computed from constants
    alone are rematerialized.
    The partitioner core (`include/pipeopt/Partition/Partitioner.h`) then
    chooses the stages: `balanced` minimizes the bottleneck stage time
    (compute + sends/receives over the topology's links) exactly for the
    program order, subject to the per-device memory limit (parameters x
    (1 + optimizer factor) + activations x in-flight microbatches of the
    schedule).

    Output: every top-level op gets `pipe.stage = k : i64` (rematerializable
    ops also get the unit attribute `pipe.remat` and the first stage using
    them), the function gets `pipe.num_stages = S : i64`, and with
    `annotate-costs` every op gets `pipe.cost = #pipe.cost<...>`.

    ```mlir
    %0 = linalg.matmul {pipe.stage = 0 : i64} ins(...) outs(...) -> ...
    %1 = linalg.matmul {pipe.stage = 1 : i64} ins(%0, ...) outs(...) -> ...
    ```

    Weights (function arguments) go to every stage that uses them; a weight
    read by more than one stage (tied weights) counts in the parameter bytes
    and memory of every one of those stages, and is reported with a warning
    and in the report's `tied_weights`.

    In-flight microbatches per stage s (of S, with M microbatches), for the
    activation memory, follow the in-flight rule of the schedule's registry
    row (schedule::InFlightRule): `gpipe` keeps all M; `1f1b`,
    `interleaved-1f1b`, `zb-h1` and `zb-v` keep min(S - s, M)
    (PipeDream-Flush bound; the zero-bubble schedules H1 and V match 1F1B's
    peak, Qi et al. ICLR'24); `forward-only` (alias `inference`) keeps 1;
    the others are generated for (S, M) and their table measured.

    Report: `report=-` prints a per-stage table and a comparison with the
    `uniform` and `params` baselines ("vs uniform: -12.3%") to stdout;
    `report=<file>` writes the JSON report (per stage `time_s`, `flops`,
    `param_bytes`, `activation_bytes`, `send_bytes`, `recv_bytes`,
    `num_ops`, ...; `bottleneck_s`, `lower_bound_s`, `imbalance`,
    `baselines.uniform.bottleneck_s`, `baselines.params.bottleneck_s`,
    `tied_weights`).

    Errors (at the op's location where one is to blame, else the
    function's): more stages than placeable ops; a memory limit no split can
    meet (names the stage and its bytes against the limit); inconsistent
    `pipe.stage` attributes with `strategy=manual`; bad option values; and
    unreadable or malformed JSON files (hardware, profile).
  }];
  // linalg ... affine: the IR of the generated backward that costs B and W
  // when training.
  let dependentDialects = ["::pipeopt::pipe::PipeDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect"];
  let options = [
    Option<"numStages", "num-stages", "int64_t", "2",
           "Number of pipeline stages (>= 1)">,
    Option<"numMicrobatches", "num-microbatches", "int64_t", "1",
           "Microbatches per iteration, for in-flight activation memory">,
    Option<"schedule", "schedule", "std::string",
           "std::string(::pipeopt::schedule::kDefaultSchedule)",
           "Schedule whose in-flight microbatches size activation memory: "
           "any pipe-schedule name, by the in-flight rule of its registry "
           "row (`pipeopt --help` lists the names)">,
    Option<"device", "device", "std::string", "\"h100\"",
           "Device preset: h100, h200, a100, cpu">,
    Option<"hardware", "hardware", "std::string", "\"\"",
           "Machine JSON file on top of `device` (docs/CostModel.md)">,
    Option<"memoryLimit", "memory-limit", "std::string", "\"\"",
           "Per-stage memory limit in bytes, with optional suffix (80GB, "
           "16GiB); empty = the device's capacity; 0 = unlimited">,
    Option<"strategy", "strategy", "::pipeopt::partition::Strategy",
           "::pipeopt::partition::Strategy::Balanced",
           "How stages are cut",
           "::pipeopt::partitionStrategyValues()">,
    Option<"report", "report", "std::string", "\"\"",
           "Write the JSON report to this file; `-` prints a table to stdout">,
    Option<"profile", "profile", "std::string", "\"\"",
           "Measured profile JSON (per op or per stage) overriding estimates">,
    Option<"training", "training", "bool", "false",
           "Stage time includes backward (B + W) and gradient traffic">,
    Option<"backwardCost", "backward-cost", "::pipeopt::BackwardCost",
           "::pipeopt::BackwardCost::Generated",
           "Where B and W times come from",
           [{::llvm::cl::values(
             clEnumValN(::pipeopt::BackwardCost::Generated, "generated",
                        "cost the ops of each op's generated backward "
                        "(pipe-differentiate's library)"),
             clEnumValN(::pipeopt::BackwardCost::Rule, "rule",
                        "per op class: B = W = F for a contraction with a "
                        "weight, ..."))}]>,
    Option<"optimizerFactor", "optimizer-factor", "double", "-1",
           "Extra bytes per parameter byte (gradients, optimizer state); "
           "-1 = 3 (fp32 Adam) when training, else 0">,
    Option<"annotateCosts", "annotate-costs", "bool", "false",
           "Attach pipe.cost = #pipe.cost<flops, bytes, time> to every op">,
  ];
  let statistics = [
    Statistic<"numPlaced", "num-placed", "Ops placed into stages">,
    Statistic<"numRemat", "num-remat", "Rematerializable ops">
  ];
}

def OutlineStagesPass : Pass<"pipe-outline-stages", "::mlir::ModuleOp"> {
  let summary = "Move each pipeline stage into its own function.";
  let description = [{
    Input: a partitioned function (every top-level op has `pipe.stage`, see
    `pipe-partition`). For each stage k the pass creates
    `func.func @<f>_stage<k>(...) attributes {pipe.stage = k : i64}`
    holding the stage's ops in program order, and rewrites `@<f>` into the
    stage graph: one `pipe.stage_call @<f>_stage<k>(...) stage k` per stage
    in stage order, then the original `func.return`. `@<f>` keeps its
    signature and gets `pipe.num_stages`.

    Stage function arguments: the function arguments of `@<f>` the stage
    uses (weights and inputs, in argument order), then the values produced
    by earlier stages that it consumes (in program order of their
    producers). Results: the values it produces that later stages or the
    return use (in program order). A value consumed by a later,
    non-adjacent stage (skip connection) is passed directly from the
    producer's `pipe.stage_call` to the consumer's.

    Rematerializable ops (`pipe.remat`, and constants / `tensor.empty`
    everywhere) are cloned into every stage function that uses them,
    directly or through other rematerialized ops, and never passed between
    stages. Values used inside regions (e.g. a scalar constant captured by a
    `linalg.generic` body) count as uses.

    ```mlir
    func.func @mlp(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>)
        -> tensor<4x8xf32> attributes {pipe.num_stages = 2 : i64} {
      %h = pipe.stage_call @mlp_stage0(%x, %w0) stage 0
          : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %y = pipe.stage_call @mlp_stage1(%w1, %h) stage 1
          : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      return %y : tensor<4x8xf32>
    }
    ```

    Errors: an op without `pipe.stage`, a stage index at or beyond
    `pipe.num_stages`, an op placed before a producer it uses, a value that
    is not a ranked tensor crossing stages, a `pipe.stage` or
    `pipe.num_stages` out of range, and an empty stage. Functions without
    any `pipe.stage` attribute are left alone; when the module has no
    partitioned function at all, the pass warns ("no partitioned function")
    and leaves the module unchanged.
  }];
  let dependentDialects = ["::pipeopt::pipe::PipeDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numStageFunctions", "num-stage-functions",
              "Stage functions created">,
    Statistic<"numCloned", "num-cloned", "Rematerialized op copies">
  ];
}

//===----------------------------------------------------------------------===//
// Scheduling: stage graph -> per-rank programs (Send/Recv inserted)
//===----------------------------------------------------------------------===//

def SchedulePass : Pass<"pipe-schedule", "::mlir::ModuleOp"> {
  let summary = "Turn the stage graph into one pipe.program per rank.";
  let description = [{
    Input: the outlined stage graph (`pipe-outline-stages`): a `func.func @f`
    carrying `pipe.num_stages = S` whose body is `pipe.stage_call
    @f_stage<k>(...) stage k` for k = 0..S-1 in stage order, then
    `func.return`. The SSA edges between the stage calls form the
    schedule::StageGraph (one edge per stage pair i -> j, skip connections
    included; bytes = total size of the tensors flowing from i to j). Value
    index k of a pair = order of first use of the value in the stage graph.

    The pass generates the schedule table with the schedule library
    (`schedule=<name>`) or imports a torch.distributed.pipelining action CSV
    (`csv=<path>`), inserts Send/Recv actions (insertCommunication),
    validates it and checks it with the blocking-semantics deadlock check,
    and then emits one `pipe.program @f_rank<r> rank r of R microbatches M
    attributes {schedule = "<name>"}` per rank, in the rank's action order:

    - F of stage k, microbatch m: `pipe.forward @f_stage<k>(...) stage k
      microbatch m`. Operands are `pipe.input <arg> microbatch m` for model
      arguments (created right before their first use on the rank for that
      microbatch), `pipe.recv` results for values produced on another rank,
      or results of the earlier `pipe.forward` of the producing stage when it
      runs on the same rank (no transfer). Results of @f's `func.return`
      become `pipe.output %v result <i> microbatch m` right after the forward
      that produces them.
    - Forward SEND / RECV: one `pipe.send` / `pipe.recv` per value flowing
      from stage i to stage j, tag `<forward, stage i -> j, microbatch m,
      value k>`.
    - BW / B / W: `pipe.backward full|input|weight stage k microbatch m`.
      Gradients are modelled structurally only (executing backward is a later
      step): a `full` / `input` backward of stage k takes as operands the
      gradients of k's outgoing values (edges k -> j, ascending j, then value
      index; each either a `pipe.recv` with a `backward` tag or a result of
      the same-rank backward of stage j) and returns one gradient per
      incoming value from an earlier stage (edges i -> k, ascending i, then
      value index), with the type of that activation. The last stage seeds
      its gradient from the loss internally (no operands); gradients of
      model arguments stay inside the backward. `weight` has no operands and
      no results.
    - Backward SEND / RECV: `pipe.send` of that backward result / `pipe.recv`
      of a tensor of the activation's type, tag `<backward, stage j -> i,
      microbatch m, value k>` (the gradient of value k of edge i -> j,
      produced by stage j).

    The stage graph function and the stage functions are kept. With
    `print-grid`, the ranks x unit-time-slots grid of the schedule is
    printed to stdout before the module.

    With `export-csv=<path>` the schedule the programs were emitted from is
    written as a torch.distributed.pipelining action CSV (schedule::exportCSV;
    `-` is stdout): by default the compute+comms form (the SEND/RECV actions
    included, each send followed by the WAIT_SEND torch 2.15's
    `_load_csv(format="compute_comms")` requires; `csv=` keeps them as they
    are; docs/TorchCSV.md), with
    `export-csv-compute-only` the compute actions only (`csv=` inserts the
    send/recv again). Either form re-imported with `csv=<path>` on the same
    stage graph gives the same programs (only the `schedule` attribute
    reads "csv").

    `schedule=zb-auto` (the zero-bubble paper's automatic scheduler,
    schedule::autoSchedule, docs/Schedules.md) schedules in simulated time
    with per-stage F, B and W times: the sums of the cost model's forward,
    input-gradient and weight-gradient times over each stage function's
    ops on `device` (the `backward-cost=rule` estimate of pipe-simulate),
    when every stage gets positive F, B and W; otherwise unit times.
    `memory-limit=<n>` caps the activations (microbatches) a rank holds at
    once (default: the number of stages) and `comm-time=<seconds>` adds a
    transfer time to every cross-rank dependency.

    Errors: no stage graph in the module, malformed stage graph, unknown
    schedule (the valid names are listed), parameters the schedule rejects
    (the library's message), unreadable / malformed CSV, a CSV whose
    send/recv actions deadlock (the cycle is named), `export-csv` with
    several stage graphs, an unwritable `export-csv` file, and `csv` together
    with any of `schedule`, `virtual-stages`, `num-ranks`, `waves`,
    `memory-limit`, `comm-time` (the CSV
    defines the whole table, so those would be silently ignored; `schedule`
    defaults to the empty string, which means 1f1b, so that an explicit
    `schedule=1f1b` is caught too),
    `memory-limit` or `comm-time` with a schedule other than zb-auto, a
    negative `memory-limit`, an unknown `device`.
  }];
  let options = [
    Option<"scheduleName", "schedule", "std::string", /*default=*/"\"\"",
           "Schedule to generate: a name or alias of the schedule registry "
           "(schedule::listSchedules(); `pipeopt --help` lists them); "
           "default 1f1b; not with csv">,
    Option<"csvPath", "csv", "std::string", /*default=*/"\"\"",
           "Import the schedule from this torch.distributed.pipelining action "
           "CSV instead of generating one (not with schedule, virtual-stages, "
           "num-ranks or waves)">,
    Option<"numMicrobatches", "num-microbatches", "int64_t", /*default=*/"0",
           "Microbatches per iteration (0: the number of stages; with csv, "
           "inferred from the file)">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"0",
           "Stages (chunks) per rank; ranks = stages / virtual-stages (0: the "
           "schedule's default)">,
    Option<"numRanks", "num-ranks", "int64_t", /*default=*/"0",
           "Number of ranks (0: derived from stages and virtual-stages)">,
    Option<"waves", "waves", "int64_t", /*default=*/"1",
           "Hanayo: number of waves">,
    Option<"printGrid", "print-grid", "bool", /*default=*/"false",
           "Print the ranks x time-slot grid of the schedule to stdout">,
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "zb-auto: activations (microbatches) a rank may hold at once (0: "
           "the number of stages, 1F1B's peak on rank 0)">,
    Option<"commTime", "comm-time", "double", /*default=*/"0",
           "zb-auto: point-to-point communication time in seconds">,
    Option<"device", "device", "std::string", "\"h100\"",
           "zb-auto: device preset whose cost model gives the per-stage F, B "
           "and W times">,
    Option<"exportCSVPath", "export-csv", "std::string", /*default=*/"\"\"",
           "Write the schedule as a torch.distributed.pipelining action CSV "
           "to this file ('-': stdout), readable with csv=<path>">,
    Option<"exportCSVComputeOnly", "export-csv-compute-only", "bool",
           /*default=*/"false",
           "With export-csv: write the compute actions only (no SEND/RECV)">,
  ];
  let dependentDialects = ["::pipeopt::pipe::PipeDialect"];
  let statistics = [
    Statistic<"numPrograms", "num-programs", "Number of pipe.program ops created">,
    Statistic<"numTransfers", "num-transfers", "Number of pipe.send ops created">
  ];
}

def AutoSchedulePass : Pass<"pipe-auto-schedule", "::mlir::ModuleOp"> {
  let summary = "Choose schedule, microbatches and chunks per rank with the "
                "explorer, then partition, outline and schedule.";
  let description = [{
    `schedule=auto` of `pipeopt-pipeline` and `pipeopt-compile --schedule
    auto`. On a prepared model (after `pipe-prepare`), takes the model
    function (the function with a body and the most ops that is not a stage
    function), builds its partitioner graph with the cost model on `device`
    / `hardware` (the graph `pipe-partition` builds) and evaluates every
    candidate configuration with the explorer library
    (include/pipeopt/Simulate/Explore.h): each candidate schedule x each
    candidate microbatch count M x each candidate chunks per rank v, on
    `num-ranks` ranks, with the model's balanced partition into ranks x v
    stages as cost table (include/pipeopt/Transforms/ModelCostTables.h) and
    the cost model's machine as system (include/pipeopt/Machine/Machine.h:
    its topology, NICs and links, speed 1 for the presets).

    Candidates:
    - schedules: `schedules=` (registry names or aliases), by default the
      explorer's default list without the asynchronous rows (PipeDream,
      PipeDream-2BW change the optimizer's semantics) for training builds,
      and the forward-only rows for inference builds (`training=false`);
      an explicit candidate must fit the build kind (a training schedule
      in an inference build, or a forward-only one in a training build, is
      an error naming the schedule and the build kind);
    - microbatches: the model's shapes are one microbatch, so every M >= 1
      is valid for the build; `num-microbatches=N` (N >= 1) fixes M,
      `num-microbatches=0` chooses among `microbatch-candidates` (default
      ranks, 2 x ranks, 4 x ranks, 8 x ranks);
    - chunks per rank: the registry row's default, and for rows with a
      configurable count also every value of `virtual-stages` (default
      none).

    Memory: a candidate is removed when its peak per-rank memory (the event
    level's peak activation bytes plus weight bytes of one rank; weights x
    (1 + `optimizer-factor`)) exceeds `memory-limit` (bytes with optional
    suffix; empty = the device's capacity; 0 = unlimited).

    Choice: the candidate with the least event-level time per microbatch
    (makespan / M; for a fixed M the makespan order); ties keep candidate
    order. One remark names the choice, its predicted time, the runner-up
    (the best candidate of another schedule) and its margin, and how many
    candidates the memory limit removed. The choice is recorded on the
    module as `pipe.auto_schedule = #pipe.auto_schedule<schedule,
    num_microbatches, virtual_stages, num_stages, makespan_s>` and the
    module is then
    partitioned (`pipe-partition` with the chosen schedule, M and ranks x v
    stages, `memory-limit`, `strategy`, `profile`, `report`), outlined and
    scheduled exactly as `pipeopt-pipeline` does for that schedule.

    With a single candidate schedule the remark says it is the only
    candidate schedule. Option errors name the option of this pass and the
    `pipeopt-pipeline` option that sets it (`num-ranks` / `num-stages=`,
    `microbatch-candidates` / `auto-microbatches=`, `schedules` /
    `auto-schedules=`).

    Errors: no model function; a bad option; a candidate schedule of the
    other build kind; no candidate could be
    evaluated; every candidate over the memory limit (the error names the
    smallest requirement and its configuration).
  }];
  let options = [
    Option<"numRanks", "num-ranks", "int64_t", "2",
           "Pipeline ranks (>= 1)">,
    Option<"numMicrobatches", "num-microbatches", "int64_t", "0",
           "Microbatches per iteration; 0 = choose among "
           "microbatch-candidates">,
    ListOption<"microbatchCandidates", "microbatch-candidates", "int64_t",
               "Microbatch counts to choose from with num-microbatches=0 "
               "(default: ranks, 2, 4 and 8 x ranks)">,
    ListOption<"schedules", "schedules", "std::string",
               "Candidate schedules (default: see the description)">,
    ListOption<"virtualStages", "virtual-stages", "int64_t",
               "Extra chunks-per-rank candidates for schedules with a "
               "configurable count (interleaved-1f1b, looped-bfs)">,
    Option<"device", "device", "std::string", "\"h100\"",
           "Device preset: h100, h200, a100, cpu">,
    Option<"hardware", "hardware", "std::string", "\"\"",
           "Machine JSON file on top of `device` (docs/CostModel.md)">,
    Option<"memoryLimit", "memory-limit", "std::string", "\"\"",
           "Per-device memory limit in bytes, with optional suffix (80GB, "
           "16GiB); empty = the device's capacity; 0 = unlimited">,
    Option<"strategy", "strategy", "::pipeopt::partition::Strategy",
           "::pipeopt::partition::Strategy::Balanced",
           "pipe-partition strategy of the final partition",
           "::pipeopt::partitionStrategyValues()">,
    Option<"report", "report", "std::string", "\"\"",
           "pipe-partition report of the final partition">,
    Option<"profile", "profile", "std::string", "\"\"",
           "pipe-partition profile of the final partition (the choice "
           "uses the cost model's estimates)">,
    Option<"training", "training", "bool", "false",
           "Training build: candidates are training schedules">,
    Option<"optimizerFactor", "optimizer-factor", "double", "-1",
           "Extra bytes per parameter byte (gradients, optimizer state); "
           "-1 = 3 (fp32 Adam) when training, else 0">,
  ];
  let dependentDialects = ["::pipeopt::pipe::PipeDialect"];
}

//===----------------------------------------------------------------------===//
// Differentiation (training): F, B, W of stage and model functions
//===----------------------------------------------------------------------===//

def DifferentiatePass : Pass<"pipe-differentiate", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of model or stage functions "
                "into F, B, W and B+W.";
  let description = [{
    For each selected function `@f` (TOSA is lowered to linalg in it first,
    and element-wise arith/math on tensors become linalg.generic) the pass
    adds, after `@f` and with its visibility (docs/Training.md; the library
    is `include/pipeopt/Autodiff/Autodiff.h`):

    - `@<p>_fwd(args...) -> (results..., saved...)`: the forward, also
      returning what the backward reads;
    - `@<p>_bwd(args..., saved..., d_results...) -> (d_args...)`: B and W
      fused, one gradient per differentiated argument in argument order;
    - `@<p>_b(args..., saved..., d_results...) -> (d_inputs..., stash...)`:
      the input gradients (B, on the critical path of a pipeline);
    - `@<p>_w(args..., saved..., d_results..., stash...) -> (d_weights...)`:
      the weight gradients (W, deferrable: what zero-bubble schedules move
      into bubbles; Qi et al., ICLR 2024).

    `d_results` has one gradient per floating-point result that depends on
    a differentiated argument. Every floating-point tensor argument is
    differentiated; the trainable ones (`trainable`) are the weights whose
    gradients W computes, the others (activations, data) get theirs in B.

    With a loss (the function returns one floating-point scalar, or
    `loss=mse|cross-entropy` appends one over result 0 with a target
    argument appended last; see Autodiff.h for the exact definitions, which
    are torch.nn.MSELoss and CrossEntropyLoss with mean reduction), `<p>` is
    `f` and the functions above differentiate `@f_loss(args..., [target]) ->
    tensor<f32>`; the pass also adds `@f_grad(args..., [target]) ->
    (loss, d_args...)`, the whole training step of one microbatch (F, then
    B+W seeded with d loss = 1). Without a loss `<p>` is `f` and there is no
    `@f_grad`.

    `@f` gets `pipe.gradient = #pipe.gradient<loss = none|self|mse|
    "cross-entropy", wrt = [...], trainable = [...], data = [...],
    seeded = [...], num_saved, saved_bytes, num_stash, stash_bytes, fwd,
    bwd, b, w[, loss_fn, grad]>` (PipeAttributes.td). `saved_bytes` (per call, i.e. per microbatch) is
    the activation memory the backward keeps: saved values plus the
    non-trainable arguments it reads. `recompute` chooses what is saved:
    `none` saves everything the backward reads, `elementwise` recomputes
    cheap element-wise and data-movement results, `all` recomputes the whole
    forward (saved_bytes then counts only the arguments).

    Errors: an op the library cannot differentiate on a path from a
    differentiated argument to a seeded result is reported at that op, by
    name, and no generated function is left behind; so are bad option
    values, an unknown function, a loss that does not fit the result,
    generated names that already exist, a function differentiated twice,
    and trainable indices that are not floating-point tensor arguments.
    With `microbatch-args=auto`, integer tensor arguments are never
    weights and are data when their leading dimension is the batch's
    (cost::classifyArguments, Analysis/Parameters.h): that of the data
    found, or, for a function whose results carry no batch dimension (a
    model returning its own loss), the one leading dimension all its
    integer tensor arguments share; when they differ, the pass cannot tell
    the data and says so ("cannot tell the per-example data of @f: ...;
    name the data arguments with microbatch-args").
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::pipeopt::pipe::PipeDialect"];
  let options = [
    ListOption<"functions", "functions", "std::string",
           "Functions to differentiate, comma-separated (default: every "
           "stage function, i.e. with pipe.stage, else the one public "
           "function with a body)">,
    Option<"loss", "loss", "::pipeopt::pipe::LossKind",
           "::pipeopt::pipe::LossKind::None",
           "The loss appended to result 0",
           "::pipeopt::lossOptionValues()">,
    ListOption<"trainable", "trainable", "std::string",
           "Weights: auto (the default, also an empty list: floating-point "
           "arguments that are not per-microbatch data), all, none, or "
           "argument indices I,J,... (pipeopt/Analysis/ArgumentSelection.h)">,
    ListOption<"microbatchArgs", "microbatch-args", "std::string",
           "Per-microbatch data arguments for trainable=auto: auto (the "
           "default, also an empty list: leading dimension is the batch "
           "dimension of result 0), all, none, or indices">,
    Option<"recompute", "recompute", "::pipeopt::autodiff::Recompute",
           "::pipeopt::autodiff::Recompute::None",
           "What the backward recomputes instead of saving",
           "::pipeopt::recomputeOptionValues()">,
  ];
}

def MaterializeBackwardPass
    : Pass<"pipe-materialize-backward", "::mlir::ModuleOp"> {
  let summary = "Turns a scheduled training pipeline into executable F, B, W "
                "and gradient actions.";
  let description = [{
    Input: a module after `pipe-schedule` of a training schedule (the stage
    graph function, one `pipe.program` per rank with callee-less
    `pipe.backward` actions). The stage graph function must return one
    floating-point scalar, the loss (pipeopt-compile --train builds it with
    `autodiff::buildLossFunction` before partitioning).

    Every stage function is differentiated (`autodiff::differentiate`,
    include/pipeopt/Autodiff/Autodiff.h) with respect to its floating-point
    activation inputs (B) and its trainable model arguments (W), and every
    program is rewritten (docs/Training.md, "Pipelined training"):

    - `pipe.forward @s` calls `@s_fwd`, which also returns the values the
      backward reads; they stay alive in the program until the last backward
      action of the same (stage, microbatch) uses them, so a rank's
      activation memory follows its schedule.
    - `pipe.backward full|input|weight` gets a callee, `@s_train_bw`,
      `@s_train_b` or `@s_train_w`: they build the gradients of the stage's
      results (the sum of the incoming gradients of each result; 1 for the
      loss), call the generated B+W / B / W and return the outgoing
      gradients in the schedule's order, then the weight gradients
      (`full`) or the B -> W stash (`input`). Each takes only the values
      its backward reads.
    - every weight gradient becomes a `pipe.gradient` of its model argument
      (the runtime accumulates, reduces across ranks, averages over
      microbatches and applies the optimizer).
    - `pipe.stash_bytes` on every forward and backward action records the
      non-weight bytes the rank still holds for that (stage, microbatch)
      after it (what its later backward actions take);
      convert-pipe-to-runtime reports it to the runtime, which measures each
      rank's peak.

    Errors: a module without a scheduled stage graph, a stage graph that does
    not return one floating-point scalar (the loss), a stage whose backward
    the autodiff library cannot build (the error is at the op), trainable
    indices that are not floating-point arguments, programs that are
    already materialized, and a backward action with no earlier forward of
    the same (stage, microbatch) on its rank.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::pipeopt::pipe::PipeDialect"];
  let options = [
    ListOption<"trainable", "trainable", "std::string",
           "Model arguments that are trained: auto (the default, also an "
           "empty list: the stage graph "
           "function's pipe.trainable attribute, else every floating-point "
           "argument not marked pipe.microbatched), none, or indices I,J,... "
           "(pipeopt/Analysis/ArgumentSelection.h)">,
    Option<"recompute", "recompute", "::pipeopt::autodiff::Recompute",
           "::pipeopt::autodiff::Recompute::None",
           "What the backward recomputes instead of saving",
           "::pipeopt::recomputeOptionValues()">,
  ];
  let statistics = [
    Statistic<"numStages", "stages", "Stage functions differentiated">,
    Statistic<"numGradients", "gradients", "pipe.gradient ops emitted">,
  ];
}

def PrepareTrainingPass : Pass<"pipe-prepare-training", "::mlir::ModuleOp"> {
  let summary = "Derive the function a training build compiles from a model "
                "function (its loss, or its one-microbatch training step).";
  let description = [{
    The training half of `pipeopt-compile --train` as a pass (the driver,
    `include/pipeopt/Driver/Driver.h`, runs it; docs/Training.md).
    `function` names the model function `@f`; unless it already carries
    `pipe.gradient` (differentiated before, e.g. by hand) the pass runs
    `pipe-differentiate` on it with `loss`, `trainable`, `microbatch-args`
    and `recompute`, which are that pass's options. Then:

    - `reference=false` (a pipelined build): `pipe-prepare` runs first, and
      the loss function `@f_loss(args..., [target]) -> tensor<f32>` becomes
      the public function the front half partitions and schedules. Its
      per-microbatch data arguments (pipe-differentiate's `data`) and its
      target get `pipe.microbatched`; its trainable arguments are recorded
      as `pipe.trainable` (pipe-materialize-backward reads both).
    - `reference=true` (the unpartitioned reference): the training step of
      one microbatch, `@f_grad(args..., [target]) -> (loss, grad_i...)`,
      keeps only the gradients of the trainable arguments. Its results are
      named `loss` and `grad_<i>` and averaged over microbatches
      (`pipe.output_name`, `pipe.reduce`); with `optimizer` each gradient is
      also marked `pipe.gradient_of` = i, so that the runtime applies the
      update. The data arguments and the target get `pipe.microbatched`,
      and a cross-entropy target keeps its `pipe.class_count`.

    Errors (at `@f`): no function `function`; a model with no loss (no
    scalar result and `loss=none`); a gradient function missing, external
    or of the wrong type; with `optimizer`, no trainable argument, or a
    trainable argument that is per-microbatch data.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::pipeopt::pipe::PipeDialect"];
  let options = [
    Option<"function", "function", "std::string", "\"\"",
           "The model function to train (required)">,
    Option<"reference", "reference", "bool", "false",
           "Build the one-microbatch training step for the unpartitioned "
           "reference (@f_grad) instead of the loss function to partition">,
    Option<"optimizer", "optimizer", "bool", "true",
           "The runtime applies an optimizer: the build needs a trainable "
           "argument, and the reference step hands its gradients to the "
           "runtime (pipe.gradient_of)">,
    Option<"loss", "loss", "::pipeopt::pipe::LossKind",
           "::pipeopt::pipe::LossKind::None",
           "pipe-differentiate's loss", "::pipeopt::lossOptionValues()">,
    ListOption<"trainable", "trainable", "std::string",
           "pipe-differentiate's trainable: auto, all, none or indices">,
    ListOption<"microbatchArgs", "microbatch-args", "std::string",
           "pipe-differentiate's microbatch-args: auto, all, none or "
           "indices">,
    Option<"recompute", "recompute", "::pipeopt::autodiff::Recompute",
           "::pipeopt::autodiff::Recompute::None",
           "pipe-differentiate's recompute",
           "::pipeopt::recomputeOptionValues()">,
  ];
}

def SetOptimizerPass : Pass<"pipe-set-optimizer", "::mlir::ModuleOp"> {
  let summary = "Record the optimizer the runtime applies after each training "
                "step, with the schedule's update rule.";
  let description = [{
    Sets the module attribute `pipe.optimizer` (`#pipe.optimizer<kind,
    ...>`), which convert-pipe-to-runtime writes to the manifest's
    "training" field: the kind (none, sgd, momentum, adamw), and with an
    optimizer `lr` and `weight_decay`, `momentum` (momentum), `beta1`,
    `beta2`, `eps` (adamw). The update rules are torch.optim.SGD and
    torch.optim.AdamW (docs/Training.md).

    Asynchronous schedules update a stage's weights as its gradients
    arrive: PipeDream after every backward (`update_every` = 1; Narayanan
    et al., SOSP 2019, weight stashing), PipeDream-2BW once per S backwards
    (`update_every` = S stages; Narayanan et al., ICML 2021, double-buffered
    weights). The schedule is the one the module's pipe.programs name.

    Errors: programs that disagree on the schedule or the microbatch count;
    an option out of range (`lr`, `weight-decay` finite and >= 0,
    `momentum` in [0, 1], `beta1` and `beta2` in [0, 1), `eps` > 0); an
    option the optimizer does not use set to another value than its default
    (`momentum` with sgd, `beta1` with momentum, `lr` with none); and the
    training checks every training build gets (also run by
    pipe-materialize-backward): PipeDream-2BW with a microbatch count that
    its update period does not divide, and an asynchronous schedule with a
    weight read on two ranks (a tied weight).
  }];
  let dependentDialects = ["::pipeopt::pipe::PipeDialect"];
  let options = [
    Option<"kind", "optimizer", "::pipeopt::pipe::OptimizerKind",
           "::pipeopt::pipe::OptimizerKind::SGD",
           "The update rule (#pipe.optimizer's kind)",
           "::pipeopt::optimizerOptionValues()">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.9",
           "Momentum of optimizer=momentum">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW's beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (L2 for sgd / momentum, decoupled for adamw)">,
  ];
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

def VerifySchedulePass : Pass<"pipe-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Check the per-rank programs: complete, ordered, matched, deadlock-free.";
  let description = [{
    Reads the `pipe.program @f_rank<r>` ops of every scheduled function back
    into a schedule::Schedule (F from `pipe.forward`, BW / B / W from
    `pipe.backward full|input|weight`, SEND / RECV from `pipe.send` /
    `pipe.recv` with their peers and tags; the stage -> rank placement is
    taken from where the forwards are) and checks, reporting the first
    violation at the offending op (the checker is ProgramChecks.h's, whose
    structural part convert-pipe-to-runtime runs too):

    1. the programs of one function agree on the rank count and microbatch
       count and cover ranks 0..R-1 once;
    2. `pipe.input` / `pipe.output` against the signature of `@f`, when the
       module has it;
    3. send/recv matching: every `pipe.send` has a `pipe.recv` with an equal
       tag and the same tensor type on the peer rank, and vice versa;
    4. schedule::validate against the stage graph of `@f` (when present;
       otherwise the chain plus the edges named by forward tags): every
       (stage, microbatch, phase) exactly once, on its rank, dependencies
       respected;
    5. schedule::checkDeadlockFree under blocking rendezvous semantics, on
       a table with one SEND / RECV per `pipe.send` / `pipe.recv` (the
       value index of the tag included): the cycle of waiting ranks is
       named, or the send and recv two ranks post to each other that carry
       different values (also two values of one transfer received in
       another order than they are sent).

    The IR is not modified. A module without any `pipe.program` is not an
    error, but gets a warning ("nothing to verify"), so that a pipeline that
    forgot `pipe-schedule` does not pass silently.

    With `export-csv=<path>` the verified schedule read back from the
    programs is written as a torch.distributed.pipelining action CSV
    (compute+comms form, or compute only with `export-csv-compute-only`;
    `-` is stdout), e.g. to save a hand-edited schedule and bring it back
    with `pipe-schedule csv=<path>`. It needs exactly one scheduled
    function (no programs at all, or programs of several functions, are
    errors then), and an unwritable file is an error. Nothing is written
    when the check fails.
  }];
  let options = [
    Option<"exportCSVPath", "export-csv", "std::string", /*default=*/"\"\"",
           "Write the verified schedule as a torch.distributed.pipelining "
           "action CSV to this file ('-': stdout)">,
    Option<"exportCSVComputeOnly", "export-csv-compute-only", "bool",
           /*default=*/"false",
           "With export-csv: write the compute actions only (no SEND/RECV)">,
  ];
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

def SimulatePass : Pass<"pipe-simulate", "::mlir::ModuleOp"> {
  let summary = "Simulate the per-rank programs at formula, table and event level.";
  let description = [{
    For every scheduled function (its `pipe.program @f_rank<r>` ops, from
    `pipe-schedule`), reads the programs back into a schedule table (as
    `pipe-verify-schedule` does), builds a per-stage cost table from the
    stage functions (`@f_stage<k>`, the callees of `pipe.stage_call` /
    `pipe.forward`) with the cost model (`include/pipeopt/Analysis/CostModel.h`,
    `docs/CostModel.md`) on `device` / `hardware`, and runs the simulator
    (`include/pipeopt/Simulate/Simulator.h`) at its three levels:

    - `formula`: the closed forms of the family the schedule's registry
      row names (schedule::ScheduleInfo::closedForm; n/a for schedules
      without one);
    - `table`: the table executed with the per-stage F/B/W times, free
      communication;
    - `event`: communication-aware, alpha-beta links and NIC contention of
      `system`.

    Cost table, per stage and per microbatch (the stage functions' tensor
    shapes are one microbatch): F, B and W = sums of the cost model's
    forward, input-gradient and weight-gradient times over the stage
    function's ops; activation bytes = the saved-activation bytes of its ops
    (what a microbatch keeps from F until its backward, the stage's outputs
    included); weight bytes = the distinct weights the stage reads (stage
    function arguments that are model arguments, and constants, in weight
    positions of the cost model's rule) times (1 + `optimizer-factor`);
    boundary bytes = the bytes of the values the stage sends to the next
    one (all stage graph edges, skip connections included, are simulated
    with their own bytes). Asynchronous schedules (registry rows
    with weight versions: `pipedream`, `pipedream-2bw`) also get weight
    staleness: the maximum and mean delay, the per-(updating stage,
    read block) delay matrices and the start-up maximum.

    After the backward pass (`include/pipeopt/Simulate/Collectives.h`,
    table and event levels): stages that more than one rank holds
    (Chimera's two pipelines) and, with `data-parallel=D` > 1, every
    stage's copies on the D pipeline replicas all-reduce the stage's weight
    gradients in a ring: the runtime's per-step double sums, 8 bytes per
    parameter element; with D > 1 a rank's stages go in buckets of at most
    `bucket-mb` MiB, each all-reduced over the rank's D replicas as soon as
    the stage's last weight gradient ends, and with `zero-stage=1` (ZeRO-1)
    in one reduce-scatter + all-gather at the end of the rank's schedule,
    the optimizer then updating 1/D of the elements; a model argument that
    several stages' `pipe.gradient` ops contribute to (a tied weight, in
    materialized training programs) gets a tied-weight all-reduce among
    the ranks holding those stages; with `optimizer-step` each stage's
    optimizer step follows on its rank. Training schedules also pay the
    runtime's gradient accumulation at every W / BW action when the
    machine gives `gradient_accumulate_s_per_element`, and the optimizer
    step is the machine's `optimizer_s_per_element` of the module's
    `pipe.optimizer` (default sgd) when given (docs/CostModel.md
    "Training steps"). The report gives the all-reduce and optimizer
    seconds per level.

    Measured times: `profile=<file>` (the JSON `pipeopt-run --profile`
    writes, docs/Runtime.md; read with `cost::loadProfile`) replaces
    the estimated F of stage k by the measured `forward_s`, and B / W by the
    measured `backward_input_s` / `backward_weight_s`, or `backward_s` /
    `backward_full_s` split in the ratio of the estimates; a backward time
    not measured is scaled with the forward measurement
    (`cost::applyMeasuredTimes`, the rule of `pipe-partition profile=`).
    The profile must give every stage of every scheduled function and no
    other stage; per-op entries (`ops`, indices into the model function
    before outlining) are rejected: apply them with `pipe-partition
    profile=` instead. Memory and boundary bytes stay the cost model's.

    Systems: by default the cost model's machine (`device=` and `hardware=`:
    ranks per node, NICs, intra- and inter-node links, its simulator
    settings; speed 1 for the presets); `system=` takes any preset
    (`compute-{slow,medium,fast}/net-{slow,medium,fast}`, `ideal`, `h100`,
    ...) or a machine JSON file with one system (docs/CostModel.md "Machine
    JSON", tools/pipeopt-explore/README.md).

    Output: a readable report (per stage costs; per level makespan, overall
    bubble ratio, and per rank bubble ratio, peak activation and weight
    bytes; communication volume; staleness) on stdout, or with
    `report=<file>` a JSON document whose `rows` carry the fields of
    `pipeopt-explore --format=json` rows (`schedule`, `stages` = ranks,
    `model_stages`, `microbatches`, `system`, `level`, `available`, `note`,
    `makespan_s`, `bubble_ratio`, `bubble_ratio_per_rank`,
    `peak_activation_bytes`, `peak_activation_bytes_per_rank`,
    `weight_bytes`, `weight_bytes_per_rank`, `comm_bytes`, `allreduce_s`,
    `allreduce_s_per_rank`, `optimizer_s`, `optimizer_s_per_rank`,
    `post_backward_s`, `collective_bytes`, staleness with its delay
    matrices and start-up maximum) plus `function`, and per function the
    data-parallel degree and the cost table (with `gradient_bytes`,
    `optimizer_s` and the `tied` groups). `trace=<file>` writes a
    Chrome / Perfetto trace of the `trace-level` timeline (one process per
    rank, compute / send / recv tracks, a flow arrow per transfer from send
    to recv), `svg=<file>` an SVG Gantt chart.

    Errors: no `pipe.program` in the module, programs that are not a valid
    schedule, a stage without a stage function, an unknown device or system
    preset, unreadable or malformed hardware / system JSON, a system file
    with more than one system, bad option values, `trace` / `svg` with more
    than one scheduled function, an unreadable or malformed profile, a
    profile whose stages do not match the programs', `data-parallel` < 1,
    `zero-stage` other than -1, 0 or 1, and unwritable output files. The IR is not modified.
  }];
  // The generated backward that costs B and W of training schedules.
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect"];
  let options = [
    Option<"device", "device", "std::string", "\"h100\"",
           "Device preset for the cost model: h100, h200, a100, cpu">,
    Option<"hardware", "hardware", "std::string", "\"\"",
           "Machine JSON file on top of `device` (docs/CostModel.md)">,
    Option<"system", "system", "std::string", "\"\"",
           "System for the event level: empty = the cost model's machine, a "
           "preset (compute-medium/net-fast, ideal, h100, ...) or a machine "
           "JSON file with one system">,
    Option<"backwardCost", "backward-cost", "::pipeopt::BackwardCost",
           "::pipeopt::BackwardCost::Generated",
           "Where B and W times come from",
           [{::llvm::cl::values(
             clEnumValN(::pipeopt::BackwardCost::Generated, "generated",
                        "cost the ops of each op's generated backward "
                        "(pipe-differentiate's library)"),
             clEnumValN(::pipeopt::BackwardCost::Rule, "rule",
                        "per op class: B = W = F for a contraction with a "
                        "weight, ..."))}]>,
    Option<"optimizerFactor", "optimizer-factor", "double", "-1",
           "Extra bytes per weight byte (gradients, optimizer state); -1 = "
           "3 (fp32 Adam) for training schedules, 0 for forward-only">,
    Option<"report", "report", "std::string", "\"\"",
           "Write the JSON report to this file; empty or `-` prints the "
           "readable report to stdout">,
    Option<"trace", "trace", "std::string", "\"\"",
           "Write a Chrome/Perfetto trace JSON of the simulated timeline">,
    Option<"svg", "svg", "std::string", "\"\"",
           "Write an SVG Gantt chart of the simulated timeline">,
    Option<"traceLevel", "trace-level", "::pipeopt::sim::Level",
           "::pipeopt::sim::Level::Event",
           "Timeline for trace= and svg=",
           [{::llvm::cl::values(
             clEnumValN(::pipeopt::sim::Level::Event, "event",
                        "communication-aware event simulation"),
             clEnumValN(::pipeopt::sim::Level::Table, "table",
                        "the table with free communication"))}]>,
    Option<"profile", "profile", "std::string", "\"\"",
           "Measured per-stage times (pipeopt-run --profile JSON, "
           "docs/CostModel.md \"Profile JSON\"): override the cost model's "
           "per-stage F (and B / W when given) before simulating">,
    Option<"dataParallel", "data-parallel", "int64_t", "1",
           "Data-parallel degree D >= 1: D replicas of the pipeline "
           "all-reduce their weight gradients after the backward pass "
           "(replica d's rank r is global rank d * ranks + r)">,
    Option<"zeroStage", "zero-stage", "int64_t", "-1",
           "ZeRO stage of the data-parallel exchange: 0 = all-reduce of the "
           "gradients, 1 = reduce-scatter, optimizer over 1/D of the "
           "elements, all-gather of the weights; -1 = the machine's "
           "\"zero_stage\" (default 0)">,
    Option<"bucketMb", "bucket-mb", "double", "-1",
           "Capacity of a data-parallel gradient bucket in MiB of the "
           "runtime's double sums (pipeopt-run --bucket-mb); -1 = the "
           "machine's \"bucket_bytes\" (default 25 MiB)">,
    Option<"optimizerStep", "optimizer-step", "bool", "false",
           "Cost an optimizer step per stage after its gradients are "
           "reduced: parameter elements x the machine's "
           "optimizer_s_per_element of the build's optimizer (pipe.optimizer, "
           "default sgd) when given, else (2 (1 + optimizer-factor) - 1) * "
           "parameter bytes / the device's memory bandwidth (a memory-bound "
           "fused update)">,
  ];
}

#endif // PIPEOPT_TRANSFORMS_PASSES_TD
