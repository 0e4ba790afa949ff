func.func @f(%a: !torch.vtensor<[2],f32>) {
  return
}
