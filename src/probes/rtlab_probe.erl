%% rtlab's probe for the Erlang VM, compiled by rtlab at run time (`rtlab beam`).
%%
%% A measuring process waits for a timer every period and writes how late each wakeup came,
%% against the ideal schedule of its method, to fd 1 as text lines (batched, through a port,
%% not the I/O server); CPU-bound processes (RealtimeTests' Leibniz pi loop) compete with it.
%%
%% Protocol (one record per line; rtlab parses it in src/probes/beam.rs):
%%   V <erlang:system_info(system_version)>
%%   A <system architecture>
%%   C <otp release> <schedulers> <schedulers online> <dirty cpu schedulers> <bind type>
%%   P <measuring process priority> <worker priority | none>   (read back from the processes)
%%   I <the measuring process's pid>
%%   T <start, erlang:monotonic_time(nanosecond)>
%%   S <latency ns> <wake time since start ns> <missed periods>
%%   E <samples> <pi terms computed by all workers>
-module(rtlab_probe).
-export([main/6, missed/2]).

-define(BATCH, 64).

main(Method, PeriodMs, DurationMs, Workers, WorkerPrio, ProbePrio) ->
    process_flag(priority, max),
    Out = open_port({fd, 0, 1}, [out, binary]),
    line(Out, ["V ", string:trim(erlang:system_info(system_version))]),
    line(Out, ["A ", erlang:system_info(system_architecture)]),
    line(Out, io_lib:format("C ~s ~b ~b ~b ~p",
                            [erlang:system_info(otp_release), erlang:system_info(schedulers),
                             erlang:system_info(schedulers_online),
                             erlang:system_info(dirty_cpu_schedulers),
                             erlang:system_info(scheduler_bind_type)])),
    Counter = counters:new(1, [write_concurrency]),
    Pids = [spawn_opt(fun() -> pi(Counter, 0, 0.0) end, [{priority, WorkerPrio}])
            || _ <- lists:seq(1, Workers)],
    WPrio = case Pids of
                [] -> none;
                [First | _] -> {priority, Pr} = process_info(First, priority), Pr
            end,
    Parent = self(),
    Probe = spawn_opt(fun() -> probe(Parent, Out, Method, PeriodMs, DurationMs) end,
                      [{priority, ProbePrio}]),
    {priority, PPr} = process_info(Probe, priority),
    line(Out, io_lib:format("P ~s ~s", [PPr, WPrio])),
    receive
        {done, Probe, N} ->
            Terms = counters:get(Counter, 1),
            [exit(P, kill) || P <- Pids],
            line(Out, io_lib:format("E ~b ~b", [N, Terms])),
            erlang:halt(0)
    end.

line(Out, IoData) -> port_command(Out, [IoData, $\n]).

pi(C, K, Acc) ->
    Sign = case K band 1 of 0 -> 1.0; 1 -> -1.0 end,
    Acc2 = Acc + 4.0 * Sign / (2 * K + 1),
    case K rem 10000 of
        9999 -> counters:add(C, 1, 10000);
        _ -> ok
    end,
    pi(C, K + 1, Acc2).

mono() -> erlang:monotonic_time(nanosecond).

probe(Parent, Out, Method, PeriodMs, DurationMs) ->
    P = PeriodMs * 1000000,
    line(Out, ["I ", pid_to_list(self())]),
    Start = mono(),
    line(Out, io_lib:format("T ~b", [Start])),
    End = Start + DurationMs * 1000000,
    S = #{out => Out, start => Start, 'end' => End, period => P, n => 0, buf => [], k => 0},
    N = case Method of
            'send-interval' ->
                %% RealtimeTests: timer:send_interval, latency against an ideal schedule
                %% anchored at the start (next += period on every tick).
                {ok, _} = timer:send_interval(PeriodMs, tick),
                send_interval(S, Start + P);
            'abs-timer' ->
                %% erlang:start_timer with absolute millisecond deadlines; latency against
                %% the deadline itself; periods passed while late are skipped and counted.
                D0 = erlang:convert_time_unit(Start, nanosecond, millisecond) + PeriodMs,
                abs_timer(S, PeriodMs, D0);
            'receive-after' ->
                %% a plain `receive after Period`, relative: latency against the moment the
                %% wait began plus one period (drift accumulates), as the OS `rel` method.
                receive_after(S, PeriodMs)
        end,
    Parent ! {done, self(), N}.

record(S = #{buf := Buf, k := K, n := N, start := Start, out := Out}, Now, Lat, Missed) ->
    Rec = ["S ", integer_to_list(Lat), $\s, integer_to_list(Now - Start), $\s,
           integer_to_list(Missed), $\n],
    case K + 1 >= ?BATCH of
        true -> port_command(Out, [Buf | Rec]), S#{buf := [], k := 0, n := N + 1};
        false -> S#{buf := [Buf | Rec], k := K + 1, n := N + 1}
    end.

finish(#{buf := Buf, out := Out, n := N}) ->
    port_command(Out, Buf),
    N.

send_interval(S = #{period := P, 'end' := End}, Next) ->
    receive
        tick ->
            Now = mono(),
            Lat = Now - Next,
            %% Every tick is delivered (late ones queue up): no period is skipped.
            S2 = record(S, Now, Lat, 0),
            case Now >= End of
                true -> finish(S2);
                false -> send_interval(S2, Next + P)
            end
    end.

abs_timer(S = #{period := P, 'end' := End}, PeriodMs, Deadline) ->
    erlang:start_timer(Deadline, self(), tick, [{abs, true}]),
    receive
        {timeout, _, tick} ->
            Now = mono(),
            Lat = Now - Deadline * 1000000,
            Next = Deadline + PeriodMs,
            Missed = missed(Lat, P),
            S2 = record(S, Now, Lat, Missed),
            case Now >= End of
                true -> finish(S2);
                false -> abs_timer(S2, PeriodMs, Next + Missed * PeriodMs)
            end
    end.

receive_after(S = #{period := P, 'end' := End}, PeriodMs) ->
    %% Stamped right before the wait: recording and the port write stay out of the latency.
    Before = mono(),
    receive after PeriodMs -> ok end,
    Now = mono(),
    Lat = Now - (Before + P),
    S2 = record(S, Now, Lat, missed(Lat, P)),
    case Now >= End of
        true -> finish(S2);
        false -> receive_after(S2, PeriodMs)
    end.

%% Deadlines missed by a wakeup Lat ns after its own: those that passed strictly before it,
%% ceil(Lat / P) - 1 (rtlab's one rule for every method).
missed(Lat, _P) when Lat =< 0 -> 0;
missed(Lat, P) -> (Lat - 1) div P.
