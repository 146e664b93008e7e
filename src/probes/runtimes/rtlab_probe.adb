--  rtlab's Ada probe without tasking: `delay` and `delay until` in the main program on
--  Ada.Calendar, where GNAT's runtime (no tasking linked) reads the clock and sleeps with
--  relative nanosleep until the time has passed. (Ada.Real_Time's `delay until` would link
--  the tasking runtime.)
with Ada.Calendar; use Ada.Calendar;
with Rtlab_Report; use Rtlab_Report;

procedure Rtlab_Probe is
   Epoch : constant Time := Time_Of (2000, 1, 1);

   function Now return Long_Long_Integer is (Long_Long_Integer'Integer_Value (Clock - Epoch));
   procedure Wait_Until (T : Long_Long_Integer) is
   begin
      delay until Epoch + Duration'Fixed_Value (T);
   end Wait_Until;
   procedure Wait (D : Long_Long_Integer) is
   begin
      delay Duration'Fixed_Value (D);
   end Wait;
   procedure Run is new Measure (Now, Wait_Until, Wait);
begin
   Announce ("nanosleep-loop", "calendar clock_resolution_ns=1000", Tasking => False);
   Run;
   Finish (0);
end Rtlab_Probe;
