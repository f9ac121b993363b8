#loc1 = loc("x")
#loc2 = loc("w")
module @jit__conv attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x16x16xf32> loc("x"), %arg1: tensor<4x3x3x3xf32> loc("w")) -> (tensor<2x4x16x16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x16x16xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x16x16xf32> loc(#loc7)
    return %0 : tensor<2x4x16x16xf32> loc(#loc6)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("_tpu.py":238:9)
#loc4 = loc("<frozen runpy>":88:4)
#loc5 = loc("jit(_conv)"(#loc3))
#loc6 = loc("jit(_conv)"(#loc4))
#loc7 = loc("conv_general_dilated"(#loc5))
