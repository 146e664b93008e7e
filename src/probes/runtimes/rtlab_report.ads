--  rtlab's probe inside the GNAT Ada runtime: the part both main programs share (shipped
--  inside rtlab, built with gnatmake). Arguments: METHOD PERIOD_NS DURATION_NS WORKERS
--  PRIORITY DISPATCHING. Lines on stdout, one each:
--    V <version>                 the runtime
--    R <key>=<value> ...         what the runtime says of itself
--    T <start_ns>                the schedule's start
--    S <latency_ns> <at_ns> <missed>
--    E <samples> <work_units>    the end: samples sent, units of work the workers did
--  Times are whole nanoseconds of the clock each main program measures with.
package Rtlab_Report is
   --  The method's name (`delay`, `delay-until`, `task-delay-until`).
   function Method return String;
   --  CPU-bound tasks asked for.
   function Workers return Natural;
   --  The measuring task's Ada priority (0: the default).
   function Priority return Natural;

   --  Writes V and the first R line: `Impl` says how the runtime implements a delay, `Clock`
   --  which clock the program reads.
   procedure Announce (Impl, Clock : String; Tasking : Boolean);

   --  The measuring loop: `delay` waits one period relative to its start (the sample is
   --  against that delay's own target); the others wait until start + k * period and skip
   --  the deadlines a late wakeup missed (rtlab's one rule).
   generic
      with function Now return Long_Long_Integer;
      with procedure Wait_Until (T : Long_Long_Integer);
      with procedure Wait (D : Long_Long_Integer);
   procedure Measure;

   --  Writes the drift (the last wakeup against the ideal schedule) and E, and flushes.
   procedure Finish (Work : Long_Long_Integer);
end Rtlab_Report;
