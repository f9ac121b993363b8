#loc1 = loc("pivots")
module @jit__lu_pivots_to_permutation attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xi32> loc("pivots")) -> (tensor<2x4xi32> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @hip_lu_pivots_to_permutation(%arg0) {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, k]) {i=2, j=4, k=4}, custom>} : (tensor<2x4xi32>) -> tensor<2x4xi32> loc(#loc6)
    return %0 : tensor<2x4xi32> loc(#loc5)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("_lowering_only.py":65:9)
#loc3 = loc("_engine.py":116:11)
#loc4 = loc("jit(_lu_pivots_to_permutation)"(#loc2))
#loc5 = loc("jit(_lu_pivots_to_permutation)"(#loc3))
#loc6 = loc("lu_pivots_to_permutation"(#loc4))
