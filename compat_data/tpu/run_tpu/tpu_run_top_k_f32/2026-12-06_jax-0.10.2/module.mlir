#loc1 = loc("x")
#loc2 = loc("_tpu.py":247:20)
#loc4 = loc("jit(_top_k)"(#loc2))
#loc6 = loc("top_k"(#loc4))
module @jit__top_k attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x64xf32> loc("x")) -> (tensor<4x3xf32> {jax.result_info = "result[0]"}, tensor<4x3xi32> {jax.result_info = "result[1]"}) {
    %0:2 = stablehlo.composite "chlo.top_k" %arg0 {composite_attributes = {k = 3 : i64}, decomposition = @chlo.top_k.impl, version = 1 : i32} : (tensor<4x64xf32>) -> (tensor<4x3xf32>, tensor<4x3xi32>) loc(#loc6)
    return %0#0, %0#1 : tensor<4x3xf32>, tensor<4x3xi32> loc(#loc5)
  } loc(#loc)
  func.func private @chlo.top_k.impl(%arg0: tensor<4x64xf32> loc("top_k"(#loc4))) -> (tensor<4x3xf32>, tensor<4x3xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<4x64xi32> loc(#loc6)
    %1:2 = "stablehlo.sort"(%arg0, %0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32> loc("top_k"(#loc4)), %arg2: tensor<f32> loc("top_k"(#loc4)), %arg3: tensor<i32> loc("top_k"(#loc4)), %arg4: tensor<i32> loc("top_k"(#loc4))):
      %4 = stablehlo.compare GT, %arg1, %arg2, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1> loc(#loc6)
      stablehlo.return %4 : tensor<i1> loc(#loc6)
    }) : (tensor<4x64xf32>, tensor<4x64xi32>) -> (tensor<4x64xf32>, tensor<4x64xi32>) loc(#loc6)
    %2 = stablehlo.slice %1#0 [0:4, 0:3] : (tensor<4x64xf32>) -> tensor<4x3xf32> loc(#loc6)
    %3 = stablehlo.slice %1#1 [0:4, 0:3] : (tensor<4x64xi32>) -> tensor<4x3xi32> loc(#loc6)
    return %2, %3 : tensor<4x3xf32>, tensor<4x3xi32> loc(#loc6)
  } loc(#loc6)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("<frozen runpy>":88:4)
#loc5 = loc("jit(_top_k)"(#loc3))
