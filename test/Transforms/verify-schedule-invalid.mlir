// RUN: pipeopt %s -split-input-file --pipe-verify-schedule -verify-diagnostics

// A swapped send/recv pair: rank 0 posts the gradient recv before sending
// the activation that rank 1 needs to produce that gradient.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{deadlock: rank 0 waits on recv from rank 1 (B stage 1 mb 0) -> rank 1 waits on recv from rank 0 (F stage 0 mb 0) -> rank 0}}
  %g = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  pipe.backward full stage 0 microbatch 0 ins(%g : tensor<4xf32>)
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
  %g = pipe.backward full stage 1 microbatch 0 -> tensor<4xf32>
  pipe.send %g to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
}

// -----

// Rank 1 never runs the forward of microbatch 1 (forward-only schedule).

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 2 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0 = pipe.forward @m_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<4xf32>
  %a1 = pipe.forward @m_stage0(%x1) stage 0 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a1 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
}
// expected-error@+1 {{invalid schedule: missing F(stage 1, mb 1) (expected on rank 1)}}
pipe.program @m_rank1 rank 1 of 2 microbatches 2 {
  %a0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y0 = pipe.forward @m_stage1(%a0) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<4xf32>
  %a1 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
}

// -----

// A recv whose send does not exist (there is no value 1 on edge 0 -> 1).

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0 = pipe.forward @m_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  // expected-error@+1 {{rank 1: pipe.recv from 0 #pipe.tag<forward, stage 0 -> 1, microbatch 0, value 1> has no matching pipe.send on rank 0}}
  %b0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 1> : tensor<4xf32>
  %y0 = pipe.forward @m_stage1(%a0) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// A send nobody receives.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0 = pipe.forward @m_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{rank 0: pipe.send to 1 #pipe.tag<forward, stage 0 -> 1, microbatch 0, value 0> has no matching pipe.recv on rank 1}}
  pipe.send %a0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y0 = pipe.forward @m_stage1(%x0) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Send and recv agree on the tag but not on the tensor type.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0 = pipe.forward @m_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-note@+1 {{the pipe.send is here}}
  pipe.send %a0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  // expected-error@+1 {{rank 1: pipe.recv from 0 #pipe.tag<forward, stage 0 -> 1, microbatch 0, value 0> receives 'tensor<2x2xf32>', but the matching pipe.send on rank 0 sends 'tensor<4xf32>'}}
  %a0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x2xf32>
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y0 = pipe.forward @m_stage1(%x0) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Two values cross 0 -> 1; rank 1 receives them in the other order. Every
// tag matches, but under blocking semantics rank 0 waits in the send of
// value 0 while rank 1 waits in the recv of value 1 (the deadlock check
// sees one action per pipe.send / pipe.recv).

func.func @m_stage0(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {pipe.stage = 0 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a:2 = pipe.forward @m_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  // expected-error@+1 {{mismatched send/recv: rank 0 posts SEND_F(stage 0 -> 1, mb 0) to rank 1, but rank 1 posts RECV_F(stage 1 <- 0, mb 0, value 1) from rank 0}}
  pipe.send %a#0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  pipe.send %a#1 to 1 <forward, stage 0 -> 1, microbatch 0, value 1> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  // expected-note@+1 {{rank 1 waits here}}
  %b = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 1> : tensor<4xf32>
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y0 = pipe.forward @m_stage1(%a, %b) stage 1 microbatch 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
}

// -----

// A backward on a rank that does not hold its stage.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  %g = pipe.backward full stage 1 microbatch 0 -> tensor<4xf32>
  // expected-error@+1 {{invalid schedule: rank 1: BW(stage 0, mb 0) belongs on rank 0}}
  pipe.backward full stage 0 microbatch 0 ins(%g : tensor<4xf32>)
}

// -----

// The same tag sent twice.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  // expected-error@+1 {{rank 0: pipe.send to 1 #pipe.tag<forward, stage 0 -> 1, microbatch 0, value 0> repeats an earlier pipe.send with the same tag to the same rank}}
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// The same tag received twice.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  // expected-error@+1 {{rank 1: pipe.recv from 0 #pipe.tag<forward, stage 0 -> 1, microbatch 0, value 0> repeats an earlier pipe.recv with the same tag from the same rank}}
  %b = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// No program for rank 1.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{no program for rank 1 of 2 (programs of @m)}}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Programs of one function disagree on the number of microbatches.

pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
}
// expected-error@+1 {{program @m_rank1 is rank 1 of 2 with 2 microbatches, but @m_rank0 is one of 2 ranks with 1 microbatches}}
pipe.program @m_rank1 rank 1 of 2 microbatches 2 {
}

// -----

// Rank and microbatch counts are range-checked before anything is sized by
// them (no allocation of 4294967297 program slots).

// expected-error@+1 {{program @m_rank0: num_ranks must be between 1 and 65536, got 4294967297}}
pipe.program @m_rank0 rank 0 of 4294967297 microbatches 1 {
}

// -----

// expected-error@+1 {{program @m_rank0: num_microbatches must be between 1 and 65536, got 99999999999}}
pipe.program @m_rank0 rank 0 of 1 microbatches 99999999999 {
}

// -----

// Without a stage graph function, the stage count comes from the stages
// the programs name.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-error@+1 {{stage 4294967296 is out of range: at most 65536 stages}}
  pipe.backward full stage 4294967296 microbatch 0
}

// -----

// pipe.input / pipe.output are checked against the model function @m:
// argument index out of range.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  // expected-error@+1 {{pipe.input reads argument 99, but @m has 1 argument(s)}}
  %x = pipe.input 99 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %a result 0 microbatch 0 : tensor<4xf32>
}

// -----

// Result index out of range.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{pipe.output writes result 3, but @m has 1 result(s)}}
  pipe.output %a result 3 microbatch 0 : tensor<4xf32>
}

// -----

// Input type differs from the model argument's type.

func.func @m_stage0(%x: tensor<8xf32>) -> tensor<8xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<8xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  // expected-error@+1 {{pipe.input reads argument 0 as 'tensor<8xf32>', but argument 0 of @m is 'tensor<4xf32>'}}
  %x = pipe.input 0 microbatch 0 : tensor<8xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<8xf32>) -> tensor<8xf32>
  pipe.output %a result 0 microbatch 0 : tensor<8xf32>
}

// -----

// Output type differs from the model result's type.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf16> attributes {pipe.stage = 0 : i64} {
  %y = arith.truncf %x : tensor<4xf32> to tensor<4xf16>
  return %y : tensor<4xf16>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf16>
  %b = arith.extf %a : tensor<4xf16> to tensor<4xf32>
  return %b : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf16>
  // expected-error@+1 {{pipe.output writes result 0 as 'tensor<4xf16>', but result 0 of @m is 'tensor<4xf32>'}}
  pipe.output %a result 0 microbatch 0 : tensor<4xf16>
}

// -----

// Nothing to verify: a warning, not silence and not an error.

// expected-warning@+1 {{pipe-verify-schedule: no pipe.program in the module, nothing to verify (run -pipe-schedule first)}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A backward listed before its forward on the same rank: the error is at
// the backward.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %g = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  pipe.backward full stage 0 microbatch 0 ins(%g : tensor<4xf32>)
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  // expected-error@+1 {{invalid schedule: rank 1: BW(stage 1, mb 0) appears before F(stage 1, mb 0)}}
  %g = pipe.backward full stage 1 microbatch 0 -> tensor<4xf32>
  %y = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %g to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
}

// -----

// A forward that appears twice: the error is at the second one.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @m_rank1 rank 1 of 2 microbatches 1 {
  %a = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{invalid schedule: rank 1: F(stage 1, mb 0) appears twice (first at position 1)}}
  %z = pipe.forward @m_stage1(%a) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// A cross-rank dependency cycle: rank 0 runs BW(0, 0) before F(0, 1), rank
// 1 runs F(1, 1) before BW(1, 0). The error is at the action of the first
// waiting rank.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 2 microbatches 2 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0 = pipe.forward @m_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{invalid schedule: no consistent execution order (cross-rank dependency cycle): rank 0 waits at BW(stage 0, mb 0) for BW(stage 1, mb 0) on rank 1; rank 1 waits at F(stage 1, mb 1) for F(stage 0, mb 1) on rank 0}}
  pipe.backward full stage 0 microbatch 0 ins(%x0 : tensor<4xf32>)
  %x1 = pipe.input 0 microbatch 1 : tensor<4xf32>
  %a1 = pipe.forward @m_stage0(%x1) stage 0 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.backward full stage 0 microbatch 1 ins(%x1 : tensor<4xf32>)
}
pipe.program @m_rank1 rank 1 of 2 microbatches 2 {
  %y0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %b0 = pipe.forward @m_stage1(%y0) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  %y1 = pipe.input 0 microbatch 1 : tensor<4xf32>
  %b1 = pipe.forward @m_stage1(%y1) stage 1 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  %g0 = pipe.backward full stage 1 microbatch 0 -> tensor<4xf32>
  %g1 = pipe.backward full stage 1 microbatch 1 -> tensor<4xf32>
}
