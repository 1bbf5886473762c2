/* Pins the layout of every struct and the value of every enum that crosses
 * the ABI, for x86_64 LP64.  The numbers are written out by hand on purpose:
 * a field inserted, removed, reordered or retyped moves an offset, which
 * breaks programs and plugins built against an older header.  The
 * _Static_asserts stop such a change at build time; the same table is
 * checked again at run time so the pins are counted and reported. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "weft/plugin.h"
#include "weft/weft.h"

#if !defined(__x86_64__) || !defined(__LP64__)
#error "these pins are for x86_64 LP64; add a table for this target"
#endif

struct pin {
  const char* what;
  size_t actual;
  size_t expected;
};

#define PIN_STATIC(T, field, offset) \
  _Static_assert(offsetof(T, field) == (offset), #T "." #field " moved");
#define PIN_ROW(T, field, offset) {#T "." #field, offsetof(T, field), (offset)},
#define SIZE_STATIC(T, size) \
  _Static_assert(sizeof(T) == (size), "sizeof(" #T ") changed");
#define SIZE_ROW(T, size) {"sizeof(" #T ")", sizeof(T), (size)},

/* Each table lists a struct's size and then every field, in order. */
#define OUTPUT_LAYOUT(S, F) \
  S(weft_output, 16)        \
  F(weft_output, node, 0)   \
  F(weft_output, index, 8)

#define WHILE_OPTIONS_LAYOUT(S, F)                     \
  S(weft_while_options, 40)                           \
  F(weft_while_options, struct_size, 0)               \
  F(weft_while_options, name, 8)                      \
  F(weft_while_options, parallel_iterations, 16)      \
  F(weft_while_options, maximum_iterations, 24)       \
  F(weft_while_options, shape_invariants, 32)

#define SHAPE_LAYOUT(S, F) \
  S(weft_shape, 16)        \
  F(weft_shape, rank, 0)   \
  F(weft_shape, dims, 8)

#define TENSOR_ARRAY_LAYOUT(S, F)    \
  S(weft_tensor_array, 24)           \
  F(weft_tensor_array, name, 0)      \
  F(weft_tensor_array, flow, 8)

#define SESSION_OPTIONS_LAYOUT(S, F)                  \
  S(weft_session_options, 72)                         \
  F(weft_session_options, struct_size, 0)             \
  F(weft_session_options, devices, 8)                 \
  F(weft_session_options, inter_op_threads, 16)       \
  F(weft_session_options, intra_op_threads, 20)       \
  F(weft_session_options, placement, 24)              \
  F(weft_session_options, transfer_precision, 28)     \
  F(weft_session_options, optimizations, 32)          \
  F(weft_session_options, device_gflops, 40)          \
  F(weft_session_options, recompute, 48)              \
  F(weft_session_options, cluster, 56)                \
  F(weft_session_options, serving_jobs, 64)

#define DEVICE_DESCRIPTION_LAYOUT(S, F)            \
  S(weft_device_description, 88)                   \
  F(weft_device_description, struct_size, 0)       \
  F(weft_device_description, name, 8)              \
  F(weft_device_description, type, 16)             \
  F(weft_device_description, index, 24)            \
  F(weft_device_description, description, 32)      \
  F(weft_device_description, vendor, 40)           \
  F(weft_device_description, plugin, 48)           \
  F(weft_device_description, memory_bytes, 56)     \
  F(weft_device_description, compute_gflops, 64)   \
  F(weft_device_description, flags, 72)            \
  F(weft_device_description, unsupported_dtypes, 80)

#define PLUGIN_DESCRIPTION_LAYOUT(S, F)               \
  S(weft_plugin_description, 64)                      \
  F(weft_plugin_description, struct_size, 0)          \
  F(weft_plugin_description, name, 8)                 \
  F(weft_plugin_description, version, 16)             \
  F(weft_plugin_description, path, 24)                \
  F(weft_plugin_description, interface_version, 32)   \
  F(weft_plugin_description, device_type, 40)         \
  F(weft_plugin_description, device_count, 48)        \
  F(weft_plugin_description, no_device_reason, 56)

#define KERNEL_DESCRIPTION_LAYOUT(S, F)                   \
  S(weft_kernel_description, 72)                          \
  F(weft_kernel_description, struct_size, 0)              \
  F(weft_kernel_description, op, 8)                       \
  F(weft_kernel_description, device_type, 16)             \
  F(weft_kernel_description, plugin, 24)                  \
  F(weft_kernel_description, dtype_attr, 32)              \
  F(weft_kernel_description, dtypes, 40)                  \
  F(weft_kernel_description, num_dtypes, 48)              \
  F(weft_kernel_description, priority, 52)                \
  F(weft_kernel_description, type_constraints, 56)        \
  F(weft_kernel_description, num_type_constraints, 64)

#define KERNEL_TENSOR_LAYOUT(S, F)             \
  S(weft_kernel_tensor, 56)                    \
  F(weft_kernel_tensor, struct_size, 0)        \
  F(weft_kernel_tensor, dtype, 8)              \
  F(weft_kernel_tensor, rank, 12)              \
  F(weft_kernel_tensor, dims, 16)              \
  F(weft_kernel_tensor, element_count, 24)     \
  F(weft_kernel_tensor, byte_size, 32)         \
  F(weft_kernel_tensor, data, 40)              \
  F(weft_kernel_tensor, offset, 48)

#define KERNEL_DEF_LAYOUT(S, F)           \
  S(weft_kernel_def, 104)                 \
  F(weft_kernel_def, struct_size, 0)      \
  F(weft_kernel_def, op, 8)               \
  F(weft_kernel_def, dtype_attr, 16)      \
  F(weft_kernel_def, dtypes, 24)          \
  F(weft_kernel_def, num_dtypes, 32)      \
  F(weft_kernel_def, priority, 36)        \
  F(weft_kernel_def, compute, 40)         \
  F(weft_kernel_def, kernel_arg, 48)      \
  F(weft_kernel_def, type_constraints, 56) \
  F(weft_kernel_def, num_type_constraints, 64) \
  F(weft_kernel_def, device_type, 72)     \
  F(weft_kernel_def, compute_async, 80)   \
  F(weft_kernel_def, compute_described, 88) \
  F(weft_kernel_def, output_overwrites, 96)

/* Frozen: laid out in arrays, so it has no struct_size and never grows. */
#define KERNEL_TYPE_CONSTRAINT_LAYOUT(S, F)           \
  S(weft_kernel_type_constraint, 24)                  \
  F(weft_kernel_type_constraint, attr, 0)             \
  F(weft_kernel_type_constraint, dtypes, 8)           \
  F(weft_kernel_type_constraint, num_dtypes, 16)

#define HOST_API_LAYOUT(S, F)                          \
  S(weft_host_api, 248)                                \
  F(weft_host_api, struct_size, 0)                     \
  F(weft_host_api, status_create, 8)                   \
  F(weft_host_api, log, 16)                            \
  F(weft_host_api, register_kernel, 24)                \
  F(weft_host_api, kernel_node_name, 32)               \
  F(weft_host_api, kernel_op, 40)                      \
  F(weft_host_api, kernel_num_inputs, 48)              \
  F(weft_host_api, kernel_num_outputs, 56)             \
  F(weft_host_api, kernel_input, 64)                   \
  F(weft_host_api, kernel_allocate_output, 72)         \
  F(weft_host_api, kernel_forward_input, 80)           \
  F(weft_host_api, kernel_attr_int, 88)                \
  F(weft_host_api, kernel_attr_float, 96)              \
  F(weft_host_api, kernel_attr_bool, 104)              \
  F(weft_host_api, kernel_attr_dtype, 112)             \
  F(weft_host_api, kernel_attr_string, 120)            \
  F(weft_host_api, kernel_attr_int_list, 128)          \
  F(weft_host_api, kernel_attr_float_list, 136)        \
  F(weft_host_api, kernel_device, 144)                 \
  F(weft_host_api, kernel_stream, 152)                 \
  F(weft_host_api, kernel_intra_op_threads, 160)       \
  F(weft_host_api, status_destroy, 168)                \
  F(weft_host_api, status_code, 176)                   \
  F(weft_host_api, kernel_run_counter, 184)            \
  F(weft_host_api, register_gradient, 192)             \
  F(weft_host_api, graph, 200)                         \
  F(weft_host_api, kernel_forward_input_or_allocate, 208) \
  F(weft_host_api, register_op, 216)                   \
  F(weft_host_api, shape, 224)                         \
  F(weft_host_api, kernel_defer, 232)                  \
  F(weft_host_api, kernel_done, 240)

#define SHAPE_API_LAYOUT(S, F)                 \
  S(weft_shape_api, 64)                       \
  F(weft_shape_api, struct_size, 0)           \
  F(weft_shape_api, shape_num_inputs, 8)      \
  F(weft_shape_api, shape_input_dtype, 16)    \
  F(weft_shape_api, shape_input_rank, 24)     \
  F(weft_shape_api, shape_input_dim, 32)      \
  F(weft_shape_api, shape_attr, 40)           \
  F(weft_shape_api, shape_set_output, 48)     \
  F(weft_shape_api, shape_error, 56)

#define OP_DESCRIPTION_LAYOUT(S, F)                 \
  S(weft_op_description, 72)                       \
  F(weft_op_description, struct_size, 0)           \
  F(weft_op_description, name, 8)                  \
  F(weft_op_description, summary, 16)              \
  F(weft_op_description, inputs, 24)               \
  F(weft_op_description, outputs, 32)              \
  F(weft_op_description, attributes, 40)           \
  F(weft_op_description, num_inputs, 48)           \
  F(weft_op_description, variadic, 52)             \
  F(weft_op_description, stateful, 56)             \
  F(weft_op_description, runs_in_runtime, 60)      \
  F(weft_op_description, origin, 64)

#define ATTR_VALUE_LAYOUT(S, F)           \
  S(weft_attr_value, 56)                 \
  F(weft_attr_value, struct_size, 0)     \
  F(weft_attr_value, type, 8)            \
  F(weft_attr_value, count, 12)          \
  F(weft_attr_value, i, 16)              \
  F(weft_attr_value, f, 24)              \
  F(weft_attr_value, s, 32)              \
  F(weft_attr_value, ints, 40)           \
  F(weft_attr_value, floats, 48)

#define OP_DEF_LAYOUT(S, F)               \
  S(weft_op_def, 104)                    \
  F(weft_op_def, struct_size, 0)         \
  F(weft_op_def, name, 8)                \
  F(weft_op_def, summary, 16)            \
  F(weft_op_def, inputs, 24)             \
  F(weft_op_def, num_inputs, 32)         \
  F(weft_op_def, outputs, 40)            \
  F(weft_op_def, num_outputs, 48)        \
  F(weft_op_def, attrs, 56)              \
  F(weft_op_def, num_attrs, 64)          \
  F(weft_op_def, stateful, 68)           \
  F(weft_op_def, shape_fn, 72)           \
  F(weft_op_def, shape_arg, 80)          \
  F(weft_op_def, gradient, 88)           \
  F(weft_op_def, gradient_arg, 96)

#define SIGNATURE_DEF_LAYOUT(S, F)          \
  S(weft_signature_def, 64)                \
  F(weft_signature_def, struct_size, 0)    \
  F(weft_signature_def, name, 8)           \
  F(weft_signature_def, num_inputs, 16)    \
  F(weft_signature_def, input_keys, 24)    \
  F(weft_signature_def, inputs, 32)        \
  F(weft_signature_def, num_outputs, 40)   \
  F(weft_signature_def, output_keys, 48)   \
  F(weft_signature_def, outputs, 56)

#define MODEL_LOAD_OPTIONS_LAYOUT(S, F)                      \
  S(weft_model_load_options, 40)                            \
  F(weft_model_load_options, struct_size, 0)                \
  F(weft_model_load_options, format, 8)                     \
  F(weft_model_load_options, session_options, 16)           \
  F(weft_model_load_options, graphdef_outputs, 24)          \
  F(weft_model_load_options, num_graphdef_outputs, 32)

#define RUN_OPTIONS_LAYOUT(S, F)         \
  S(weft_run_options, 24)                \
  F(weft_run_options, struct_size, 0)    \
  F(weft_run_options, timeout_ms, 8)     \
  F(weft_run_options, trace_level, 16)

#define DEVICE_PROPERTIES_LAYOUT(S, F)             \
  S(weft_device_properties, 56)                    \
  F(weft_device_properties, struct_size, 0)        \
  F(weft_device_properties, description, 8)        \
  F(weft_device_properties, vendor, 16)            \
  F(weft_device_properties, memory_bytes, 24)      \
  F(weft_device_properties, compute_gflops, 32)    \
  F(weft_device_properties, flags, 40)             \
  F(weft_device_properties, unsupported_dtypes, 48)

#define PLUGIN_API_LAYOUT(S, F)                       \
  S(weft_plugin_api, 216)                             \
  F(weft_plugin_api, struct_size, 0)                  \
  F(weft_plugin_api, name, 8)                         \
  F(weft_plugin_api, version, 16)                     \
  F(weft_plugin_api, device_type, 24)                 \
  F(weft_plugin_api, device_count, 32)                \
  F(weft_plugin_api, device_open, 40)                 \
  F(weft_plugin_api, device_close, 48)                \
  F(weft_plugin_api, device_properties, 56)           \
  F(weft_plugin_api, memory_allocate, 64)             \
  F(weft_plugin_api, memory_free, 72)                 \
  F(weft_plugin_api, copy_host_to_device, 80)         \
  F(weft_plugin_api, copy_device_to_host, 88)         \
  F(weft_plugin_api, copy_device_to_device, 96)       \
  F(weft_plugin_api, stream_create, 104)              \
  F(weft_plugin_api, stream_destroy, 112)             \
  F(weft_plugin_api, stream_synchronize, 120)         \
  F(weft_plugin_api, event_create, 128)               \
  F(weft_plugin_api, event_destroy, 136)              \
  F(weft_plugin_api, event_record, 144)               \
  F(weft_plugin_api, event_synchronize, 152)          \
  F(weft_plugin_api, stream_wait_event, 160)          \
  F(weft_plugin_api, shutdown, 168)                   \
  F(weft_plugin_api, collective_unique_id, 176)       \
  F(weft_plugin_api, collective_comm_create, 184)     \
  F(weft_plugin_api, collective_all_reduce, 192)      \
  F(weft_plugin_api, collective_broadcast, 200)       \
  F(weft_plugin_api, collective_comm_destroy, 208)

#define PLUGIN_INIT_ARGS_LAYOUT(S, F)                 \
  S(weft_plugin_init_args, 48)                        \
  F(weft_plugin_init_args, struct_size, 0)            \
  F(weft_plugin_init_args, host_min_version, 8)       \
  F(weft_plugin_init_args, host_max_version, 12)      \
  F(weft_plugin_init_args, host, 16)                  \
  F(weft_plugin_init_args, registrar, 24)             \
  F(weft_plugin_init_args, chosen_version, 32)        \
  F(weft_plugin_init_args, plugin, 40)

#define ALL_LAYOUTS(S, F)            \
  OUTPUT_LAYOUT(S, F)                \
  WHILE_OPTIONS_LAYOUT(S, F)         \
  SHAPE_LAYOUT(S, F)                 \
  TENSOR_ARRAY_LAYOUT(S, F)          \
  SESSION_OPTIONS_LAYOUT(S, F)       \
  DEVICE_DESCRIPTION_LAYOUT(S, F)    \
  PLUGIN_DESCRIPTION_LAYOUT(S, F)    \
  KERNEL_DESCRIPTION_LAYOUT(S, F)    \
  KERNEL_TENSOR_LAYOUT(S, F)         \
  KERNEL_DEF_LAYOUT(S, F)            \
  KERNEL_TYPE_CONSTRAINT_LAYOUT(S, F) \
  HOST_API_LAYOUT(S, F)              \
  SHAPE_API_LAYOUT(S, F)             \
  OP_DESCRIPTION_LAYOUT(S, F)        \
  ATTR_VALUE_LAYOUT(S, F)            \
  OP_DEF_LAYOUT(S, F)                \
  SIGNATURE_DEF_LAYOUT(S, F)         \
  MODEL_LOAD_OPTIONS_LAYOUT(S, F)    \
  RUN_OPTIONS_LAYOUT(S, F)           \
  DEVICE_PROPERTIES_LAYOUT(S, F)     \
  PLUGIN_API_LAYOUT(S, F)            \
  PLUGIN_INIT_ARGS_LAYOUT(S, F)

ALL_LAYOUTS(SIZE_STATIC, PIN_STATIC)

static void check_table(const struct pin* pins, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    cr_expect_eq(pins[i].actual, pins[i].expected, "%s is %zu, pinned at %zu",
                 pins[i].what, pins[i].actual, pins[i].expected);
  }
}

#define LAYOUT_TEST(NAME, LAYOUT)                               \
  Test(abi_layout, NAME) {                                      \
    static const struct pin pins[] = {LAYOUT(SIZE_ROW, PIN_ROW)}; \
    check_table(pins, sizeof pins / sizeof pins[0]);            \
  }

LAYOUT_TEST(weft_output, OUTPUT_LAYOUT)
LAYOUT_TEST(weft_while_options, WHILE_OPTIONS_LAYOUT)
LAYOUT_TEST(weft_shape, SHAPE_LAYOUT)
LAYOUT_TEST(weft_tensor_array, TENSOR_ARRAY_LAYOUT)
LAYOUT_TEST(weft_session_options, SESSION_OPTIONS_LAYOUT)
LAYOUT_TEST(weft_device_description, DEVICE_DESCRIPTION_LAYOUT)
LAYOUT_TEST(weft_plugin_description, PLUGIN_DESCRIPTION_LAYOUT)
LAYOUT_TEST(weft_kernel_description, KERNEL_DESCRIPTION_LAYOUT)
LAYOUT_TEST(weft_kernel_tensor, KERNEL_TENSOR_LAYOUT)
LAYOUT_TEST(weft_kernel_def, KERNEL_DEF_LAYOUT)
LAYOUT_TEST(weft_kernel_type_constraint, KERNEL_TYPE_CONSTRAINT_LAYOUT)
LAYOUT_TEST(weft_host_api, HOST_API_LAYOUT)
LAYOUT_TEST(weft_signature_def, SIGNATURE_DEF_LAYOUT)
LAYOUT_TEST(weft_model_load_options, MODEL_LOAD_OPTIONS_LAYOUT)
LAYOUT_TEST(weft_run_options, RUN_OPTIONS_LAYOUT)
LAYOUT_TEST(weft_device_properties, DEVICE_PROPERTIES_LAYOUT)
LAYOUT_TEST(weft_plugin_api, PLUGIN_API_LAYOUT)
LAYOUT_TEST(weft_plugin_init_args, PLUGIN_INIT_ARGS_LAYOUT)

/* ---- Enum values: stored in files and passed to plugins. ---- */

#define DTYPE_VALUES(X)       \
  X(WEFT_DTYPE_INVALID, 0)    \
  X(WEFT_FLOAT32, 1)          \
  X(WEFT_FLOAT64, 2)          \
  X(WEFT_INT32, 3)            \
  X(WEFT_INT64, 4)            \
  X(WEFT_UINT8, 5)            \
  X(WEFT_BOOL, 6)             \
  X(WEFT_FLOAT16, 7)          \
  X(WEFT_BFLOAT16, 8)         \
  X(WEFT_INT8, 9)             \
  X(WEFT_INT16, 10)           \
  X(WEFT_UINT16, 11)          \
  X(WEFT_UINT32, 12)          \
  X(WEFT_UINT64, 13)

/* absl::StatusCode numbering, which Java, Julia and gRPC users know. */
#define CODE_VALUES(X)              \
  X(WEFT_OK, 0)                     \
  X(WEFT_CANCELLED, 1)              \
  X(WEFT_UNKNOWN, 2)                \
  X(WEFT_INVALID_ARGUMENT, 3)       \
  X(WEFT_DEADLINE_EXCEEDED, 4)      \
  X(WEFT_NOT_FOUND, 5)              \
  X(WEFT_ALREADY_EXISTS, 6)         \
  X(WEFT_PERMISSION_DENIED, 7)      \
  X(WEFT_RESOURCE_EXHAUSTED, 8)     \
  X(WEFT_FAILED_PRECONDITION, 9)    \
  X(WEFT_ABORTED, 10)               \
  X(WEFT_OUT_OF_RANGE, 11)          \
  X(WEFT_UNIMPLEMENTED, 12)         \
  X(WEFT_INTERNAL, 13)              \
  X(WEFT_UNAVAILABLE, 14)           \
  X(WEFT_DATA_LOSS, 15)             \
  X(WEFT_UNAUTHENTICATED, 16)

#define OTHER_CONSTANTS(X)                   \
  X(WEFT_LOG_DEBUG, 0)                       \
  X(WEFT_LOG_INFO, 1)                        \
  X(WEFT_LOG_WARNING, 2)                     \
  X(WEFT_LOG_ERROR, 3)                       \
  X(WEFT_ATTR_INT, 0)                        \
  X(WEFT_ATTR_FLOAT, 1)                      \
  X(WEFT_ATTR_BOOL, 2)                       \
  X(WEFT_ATTR_DTYPE, 3)                      \
  X(WEFT_ATTR_STRING, 4)                     \
  X(WEFT_ATTR_INT_LIST, 5)                   \
  X(WEFT_ATTR_FLOAT_LIST, 6)                 \
  X(WEFT_ATTR_SHAPE, 7)                      \
  X(WEFT_ATTR_TENSOR, 8)                     \
  X(WEFT_MAX_RANK, 32)                       \
  X(WEFT_DEVICE_HOST_MEMORY, 1)              \
  X(WEFT_COLLECTIVE_SUM, 0)                  \
  X(WEFT_COLLECTIVE_MEAN, 1)                 \
  X(WEFT_PLUGIN_MAX_COMM_ID, 1024)           \
  X(WEFT_PLUGIN_INTERFACE_MAJOR, 1)          \
  X(WEFT_ABI_VERSION_MAJOR, 1)               \
  X(WEFT_VERSION_PACK(1, 0), 0x10000)        \
  X(WEFT_VERSION_PACK(2, 3), 0x20003)        \
  X(WEFT_VERSION_MAJOR_OF(0x20003), 2)       \
  X(WEFT_VERSION_MINOR_OF(0x20003), 3)

#define VALUE_STATIC(name, value) \
  _Static_assert((name) == (value), #name " changed");
#define VALUE_ROW(name, value) {#name, (size_t)(name), (size_t)(value)},

DTYPE_VALUES(VALUE_STATIC)
CODE_VALUES(VALUE_STATIC)
OTHER_CONSTANTS(VALUE_STATIC)

Test(abi_layout, dtype_values) {
  static const struct pin pins[] = {DTYPE_VALUES(VALUE_ROW)};
  check_table(pins, sizeof pins / sizeof pins[0]);
}

Test(abi_layout, status_code_values) {
  static const struct pin pins[] = {CODE_VALUES(VALUE_ROW)};
  check_table(pins, sizeof pins / sizeof pins[0]);
}

Test(abi_layout, other_constants) {
  static const struct pin pins[] = {OTHER_CONSTANTS(VALUE_ROW)};
  check_table(pins, sizeof pins / sizeof pins[0]);
  cr_expect_str_eq(WEFT_PLUGIN_ENTRY_NAME, "weft_plugin_entry");
}

/* The library a program runs against must implement at least the user API
 * its headers describe, and host at least the plugin interface they
 * describe. */
Test(abi_layout, library_speaks_the_header_versions) {
  uint32_t abi = weft_abi_version();
  cr_expect_eq(WEFT_VERSION_MAJOR_OF(abi), WEFT_ABI_VERSION_MAJOR);
  cr_expect_geq(WEFT_VERSION_MINOR_OF(abi), WEFT_ABI_VERSION_MINOR);

  uint32_t min = 0, max = 0;
  weft_plugin_interface_range(&min, &max);
  uint32_t header = WEFT_VERSION_PACK(WEFT_PLUGIN_INTERFACE_MAJOR,
                                      WEFT_PLUGIN_INTERFACE_MINOR);
  cr_expect_leq(min, header, "min %#x above the header's %#x", min, header);
  cr_expect_geq(max, header, "max %#x below the header's %#x", max, header);
  weft_plugin_interface_range(NULL, NULL); /* documented as allowed */

  const char* version = weft_version_string();
  cr_assert_not_null(version);
  cr_expect_gt(strlen(version), 0);
}
