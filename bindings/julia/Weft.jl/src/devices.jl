# Versions, plugins, devices and the op library.

"""The library's release, e.g. "0.1.0"."""
version_string() = unsafe_string(@ccall libweft.weft_version_string()::Ptr{UInt8})

"""The user-API version the loaded library implements."""
function abi_version()
    packed = @ccall libweft.weft_abi_version()::UInt32
    return VersionNumber(packed >> 16, packed & 0xffff)
end

"""The range of plugin-interface versions the library can host."""
function plugin_interface_range()
    low = Ref{UInt32}(0)
    high = Ref{UInt32}(0)
    @ccall libweft.weft_plugin_interface_range(low::Ptr{UInt32}, high::Ptr{UInt32})::Cvoid
    unpack(v) = VersionNumber(v >> 16, v & 0xffff)
    return unpack(low[]):unpack(high[])
end

"""Loads the plugins on the search path (WEFT_PLUGIN_PATH) if not done yet."""
discover_plugins() = check(@ccall libweft.weft_plugins_discover()::Ptr{Cvoid})

"""Loads one plugin file; a refusal is a `WeftError` saying why."""
load_plugin(path::AbstractString) =
    check(@ccall libweft.weft_plugin_load(path::Cstring)::Ptr{Cvoid})

"""
    devices() -> Vector

Every device of every loaded plugin (discovering plugins first): named
tuples `(name, type, index, description, vendor, plugin, memory_bytes,
compute_gflops, host_memory, unsupported_dtypes)`; `unsupported_dtypes` has
bit `1 << code` set for each dtype code the device cannot run although its
plugin has kernels for it (an OpenCL device without float64).
"""
function devices()
    discover_plugins()
    count = @ccall libweft.weft_device_count()::Int32
    result = []
    for i in Int32(0):count-Int32(1)
        d = Ref(DeviceDescriptionC(sizeof(DeviceDescriptionC), C_NULL, C_NULL, 0,
                                   C_NULL, C_NULL, C_NULL, 0, 0.0, 0, 0))
        check(@ccall libweft.weft_device_describe(
            i::Int32, d::Ptr{DeviceDescriptionC})::Ptr{Cvoid})
        x = d[]
        push!(result, (name = c_string(x.name), type = c_string(x.type),
                       index = Int(x.index), description = c_string(x.description),
                       vendor = c_string(x.vendor), plugin = c_string(x.plugin),
                       memory_bytes = Int(x.memory_bytes),
                       compute_gflops = x.compute_gflops,
                       host_memory = (x.flags & 0x1) != 0,
                       unsupported_dtypes = x.unsupported_dtypes))
    end
    return result
end

"""The loaded plugins: `(name, version, path, interface_version, device_type,
device_count, no_device_reason)`."""
function plugins()
    discover_plugins()
    count = @ccall libweft.weft_plugin_count()::Int32
    result = []
    for i in Int32(0):count-Int32(1)
        d = Ref(PluginDescriptionC(sizeof(PluginDescriptionC), C_NULL, C_NULL,
                                   C_NULL, 0, C_NULL, 0, C_NULL))
        check(@ccall libweft.weft_plugin_describe(
            i::Int32, d::Ptr{PluginDescriptionC})::Ptr{Cvoid})
        x = d[]
        push!(result, (name = c_string(x.name), version = c_string(x.version),
                       path = c_string(x.path),
                       interface_version = VersionNumber(x.interface_version >> 16,
                                                         x.interface_version & 0xffff),
                       device_type = c_string(x.device_type),
                       device_count = Int(x.device_count),
                       no_device_reason = c_string(x.no_device_reason)))
    end
    return result
end

"""Plugin files that were refused: `path => reason`."""
function plugin_refusals()
    count = @ccall libweft.weft_plugin_refusal_count()::Int32
    result = Pair{String,String}[]
    for i in Int32(0):count-Int32(1)
        path = Ref{Ptr{UInt8}}(C_NULL)
        reason = Ref{Ptr{UInt8}}(C_NULL)
        check(@ccall libweft.weft_plugin_refusal(
            i::Int32, path::Ptr{Ptr{UInt8}}, reason::Ptr{Ptr{UInt8}})::Ptr{Cvoid})
        push!(result, c_string(path[]) => c_string(reason[]))
    end
    return result
end

"""Plugin files not loaded because the same plugin was loaded first from
another file (an installed copy behind a build tree's): `path => the loaded
plugin's path`.  Not refusals.  User API 1.13."""
function plugin_shadowed()
    count = @ccall libweft.weft_plugin_shadowed_count()::Int32
    result = Pair{String,String}[]
    for i in Int32(0):count-Int32(1)
        path = Ref{Ptr{UInt8}}(C_NULL)
        by = Ref{Ptr{UInt8}}(C_NULL)
        check(@ccall libweft.weft_plugin_shadowed(
            i::Int32, path::Ptr{Ptr{UInt8}}, by::Ptr{Ptr{UInt8}})::Ptr{Cvoid})
        push!(result, c_string(path[]) => c_string(by[]))
    end
    return result
end

"""
    op_descriptions() -> Vector

Every op of the library: `(name, summary, inputs, outputs, attributes,
num_inputs, variadic, stateful, runs_in_runtime, origin)`; `origin` is
"runtime", "program" or "plugin NAME".
"""
function op_descriptions()
    count = @ccall libweft.weft_op_count()::Int32
    result = []
    for i in Int32(0):count-Int32(1)
        d = Ref(OpDescriptionC(sizeof(OpDescriptionC), C_NULL, C_NULL, C_NULL,
                               C_NULL, C_NULL, 0, 0, 0, 0, C_NULL))
        check(@ccall libweft.weft_op_describe(i::Int32, d::Ptr{OpDescriptionC})::Ptr{Cvoid})
        x = d[]
        push!(result, (name = c_string(x.name), summary = c_string(x.summary),
                       inputs = c_string(x.inputs), outputs = c_string(x.outputs),
                       attributes = c_string(x.attributes),
                       num_inputs = Int(x.num_inputs), variadic = x.variadic != 0,
                       stateful = x.stateful != 0,
                       runs_in_runtime = x.runs_in_runtime != 0,
                       origin = c_string(x.origin)))
    end
    return result
end

"""The kernels plugins offer for op `op_type`, best first: `(op, device_type,
plugin, dtype_attr, dtypes, priority, type_constraints)`, the last a list of
`(attr, dtypes)` for the kernel's further type attributes (Cast's DstT)."""
function kernels(op_type::AbstractString)
    count = @ccall libweft.weft_kernel_count(op_type::Cstring)::Int32
    result = []
    for i in Int32(0):count-Int32(1)
        d = Ref(KernelDescriptionC(sizeof(KernelDescriptionC), C_NULL, C_NULL,
                                   C_NULL, C_NULL, C_NULL, 0, 0, C_NULL, 0))
        check(@ccall libweft.weft_kernel_describe(
            op_type::Cstring, i::Int32, d::Ptr{KernelDescriptionC})::Ptr{Cvoid})
        x = d[]
        dtypes = [DType(unsafe_load(x.dtypes, j)) for j in 1:x.num_dtypes]
        constraints = map(1:x.num_type_constraints) do k
            c = unsafe_load(x.type_constraints, k)
            (attr = c_string(c.attr),
             dtypes = [DType(unsafe_load(c.dtypes, j)) for j in 1:c.num_dtypes])
        end
        push!(result, (op = c_string(x.op), device_type = c_string(x.device_type),
                       plugin = c_string(x.plugin), dtype_attr = c_string(x.dtype_attr),
                       dtypes = dtypes, priority = Int(x.priority),
                       type_constraints = constraints))
    end
    return result
end
