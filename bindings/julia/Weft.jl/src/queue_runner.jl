# Queue runners (the weft_queue_runner_ functions of weft/session.h):
# threads that run a queue's enqueue op over and over.  Queues themselves
# are ordinary ops, built with `op` (FIFOQueue, QueueEnqueue, QueueDequeue,
# QueueClose...).

"""
    QueueRunner(session, enqueue; num_threads = 1, close = nothing)

Starts `num_threads` threads (1 to 64) that run target `enqueue` (a
QueueEnqueue node) in `session` until a run fails, so that a graph's input
stage fills a queue while training dequeues.  A run ending with
OUT_OF_RANGE (the input is exhausted) or CANCELLED (the queue was closed)
ends that thread quietly; when the last thread ends so, `close` (a
QueueClose node) runs, so that consumers drain the queue and then see
OUT_OF_RANGE.  Any other error is kept (the first: [`runner_error`](@ref)),
runs `close` and stops every thread.  [`stop`](@ref) stops it; until then
the runner and its session are kept alive, also when the program drops
them (the threads run in the session).
"""
mutable struct QueueRunner
    ptr::Ptr{Cvoid}
    session::Session
end

# Runners not yet stopped: kept (with their sessions) from the garbage
# collector, since their threads run in the session.
const RUNNING = IdDict{QueueRunner,Nothing}()
const RUNNING_LOCK = ReentrantLock()

function QueueRunner(s::Session, enqueue::Node; num_threads::Integer = 1,
                     close::Union{Node,Nothing} = nothing)
    check_graph(s.graph, enqueue)
    close === nothing || check_graph(s.graph, close)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    close_c = close === nothing ? C_NULL : Base.unsafe_convert(Ptr{Cvoid}, close)
    GC.@preserve s enqueue close check(@ccall libweft.weft_queue_runner_start(
        s::Ptr{Cvoid}, enqueue::Ptr{Cvoid}, Int32(num_threads)::Int32,
        close_c::Ptr{Cvoid}, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    runner = QueueRunner(out[], s)
    lock(() -> RUNNING[runner] = nothing, RUNNING_LOCK)
    return runner
end

Base.isopen(r::QueueRunner) = r.ptr != C_NULL

"""
    runner_error(r) -> Union{WeftError, Nothing}

The first error a runner thread met, or `nothing` while there is none; the
runner goes on running.
"""
function runner_error(r::QueueRunner)
    isopen(r) || throw(ClosedError("QueueRunner"))
    try
        GC.@preserve r check(@ccall libweft.weft_queue_runner_error(
            r.ptr::Ptr{Cvoid})::Ptr{Cvoid})
        return nothing
    catch e
        e isa WeftError || rethrow()
        return e
    end
end

"""
    stop(r; cancel = nothing)

Stops the runner's threads and waits for them: their runs in flight are
cancelled (an enqueue waiting for room ends at once); `cancel` (a
QueueClose node with `cancel_pending_enqueues = true`) runs first.  Throws
the first error a runner thread met as a `WeftError` (the cancellation by
the stop itself is not one).  Stopping twice throws a `ClosedError`.
"""
function stop(r::QueueRunner; cancel::Union{Node,Nothing} = nothing)
    isopen(r) || throw(ClosedError("QueueRunner"))
    cancel === nothing || check_graph(r.session.graph, cancel)
    cancel_c = cancel === nothing ? C_NULL : Base.unsafe_convert(Ptr{Cvoid}, cancel)
    p = r.ptr
    r.ptr = C_NULL
    try
        GC.@preserve r cancel check(@ccall libweft.weft_queue_runner_stop(
            p::Ptr{Cvoid}, cancel_c::Ptr{Cvoid})::Ptr{Cvoid})
    finally
        lock(() -> delete!(RUNNING, r), RUNNING_LOCK)
    end
    return nothing
end

"""`close(r)`: stops the runner as [`stop`](@ref) does, without throwing
the error a thread met; harmless once stopped."""
function Base.close(r::QueueRunner)
    isopen(r) || return nothing
    try
        stop(r)
    catch e
        e isa WeftError || rethrow()
    end
    return nothing
end

Base.show(io::IO, r::QueueRunner) =
    print(io, isopen(r) ? "QueueRunner(running)" : "QueueRunner(stopped)")
