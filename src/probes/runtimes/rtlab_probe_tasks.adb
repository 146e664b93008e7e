--  rtlab's Ada probe with tasking, on Ada.Real_Time (CLOCK_MONOTONIC): the measuring loop in an
--  Ada task (`task-delay-until`, at the asked priority) or in the environment task, beside
--  CPU-bound worker tasks. With tasking linked, GNAT waits for a delay with
--  pthread_cond_timedwait on an absolute monotonic time.
with Ada.Real_Time; use Ada.Real_Time;
with Rtlab_Report; use Rtlab_Report;
with System;
with Ada.Dynamic_Priorities;

procedure Rtlab_Probe_Tasks is
   function Ns (S : Time_Span) return Long_Long_Integer is
     (Long_Long_Integer'Integer_Value (To_Duration (S)));
   function Span (N : Long_Long_Integer) return Time_Span is
     (To_Time_Span (Duration'Fixed_Value (N)));

   Epoch : constant Time := Clock;
   function Now return Long_Long_Integer is (Ns (Clock - Epoch));
   procedure Wait_Until (T : Long_Long_Integer) is
   begin
      delay until Epoch + Span (T);
   end Wait_Until;
   procedure Wait (D : Long_Long_Integer) is
   begin
      delay To_Duration (Span (D));
   end Wait;
   procedure Run is new Measure (Now, Wait_Until, Wait);

   protected Tally is
      procedure Add (N : Long_Long_Integer);
      function Total return Long_Long_Integer;
   private
      Sum : Long_Long_Integer := 0;
   end Tally;

   protected body Tally is
      procedure Add (N : Long_Long_Integer) is
      begin
         Sum := Sum + N;
      end Add;
      function Total return Long_Long_Integer is (Sum);
   end Tally;

   Done : Boolean := False with Atomic;

   --  The workers never run above the measuring task: with a priority asked, one below it
   --  (GNAT's default, 48, would put busy FIFO workers above a measurer asked below that).
   function Spinner_Priority return System.Any_Priority is
     (if Priority = 0 then System.Default_Priority
      else System.Any_Priority (Integer'Max (Priority - 1, 0)));

   task type Spinner with Priority => Spinner_Priority;
   task body Spinner is
      N : Long_Long_Integer := 0;
   begin
      while not Done loop
         N := N + 1;
      end loop;
      Tally.Add (N);
   end Spinner;

   task type Measurer (Prio : System.Any_Priority) with Priority => Prio;
   task body Measurer is
   begin
      Run;
   end Measurer;

   function Measurer_Priority return System.Any_Priority is
     (if Priority = 0 then System.Default_Priority else System.Any_Priority (Priority));
begin
   --  The environment task measures too (every method but task-delay-until): at the asked
   --  priority, not GNAT's default.
   if Priority > 0 then
      Ada.Dynamic_Priorities.Set_Priority (Measurer_Priority);
   end if;
   Announce ("cond-timedwait", "real-time clock_resolution_ns=1", Tasking => True);
   declare
      Spinners : array (1 .. Workers) of Spinner;
   begin
      if Method = "task-delay-until" then
         declare
            M : Measurer (Measurer_Priority);
         begin
            null;
         end;
      else
         Run;
      end if;
      Done := True;
   end;
   Finish (Tally.Total);
end Rtlab_Probe_Tasks;
