with Ada.Command_Line;
with Ada.Strings.Fixed;
with Ada.Text_IO;
with GNAT.Compiler_Version;

package body Rtlab_Report is
   package CV is new GNAT.Compiler_Version;

   Samples : Long_Long_Integer := 0;
   Start   : Long_Long_Integer := 0;
   Last    : Long_Long_Integer := 0;
   Ideal   : Long_Long_Integer := 0;
   Pending : Natural := 0;

   function Arg (I : Positive) return String is (Ada.Command_Line.Argument (I));
   function Num (I : Positive) return Long_Long_Integer is (Long_Long_Integer'Value (Arg (I)));
   function Img (X : Long_Long_Integer) return String is
     (Ada.Strings.Fixed.Trim (Long_Long_Integer'Image (X), Ada.Strings.Left));

   function Method return String is (Arg (1));
   function Workers return Natural is (Natural (Num (4)));
   function Priority return Natural is (Natural (Num (5)));
   function Period return Long_Long_Integer is (Num (2));
   function Periods return Long_Long_Integer is (Num (3) / Num (2));

   procedure Line (S : String) is
   begin
      Ada.Text_IO.Put_Line (S);
      Pending := Pending + 1;
      if Pending >= 64 then
         Ada.Text_IO.Flush;
         Pending := 0;
      end if;
   end Line;

   procedure Announce (Impl, Clock : String; Tasking : Boolean) is
   begin
      Line ("V GNAT " & CV.Version);
      Line ("R delay_impl=" & Impl & " clock=" & Clock & " tasking=" & (if Tasking then "1" else "0")
            & " dispatching=" & Arg (6) & " priority=" & Img (Long_Long_Integer (Priority))
            & " workers=" & Img (Long_Long_Integer (Workers)) & " duration_small_ns=1");
   end Announce;

   procedure Sample (Deadline, Now, Missed : Long_Long_Integer) is
   begin
      Line ("S " & Img (Now - Deadline) & " " & Img (Now - Start) & " " & Img (Missed));
      Samples := Samples + 1;
      Last := Now;
   end Sample;

   procedure Measure is
      P : constant Long_Long_Integer := Period;
      N : constant Long_Long_Integer := Periods;
      K : Long_Long_Integer := 1;
   begin
      Start := Now;
      Last := Start;
      Line ("T " & Img (Start));
      Ada.Text_IO.Flush;
      Pending := 0;
      if Method = "delay" then
         for I in 1 .. N loop
            declare
               Before : constant Long_Long_Integer := Now;
            begin
               Wait (P);
               Sample (Before + P, Now, 0);
               Ideal := Start + I * P;
            end;
         end loop;
         return;
      end if;
      while K <= N loop
         declare
            Deadline : constant Long_Long_Integer := Start + K * P;
            At_Wake  : Long_Long_Integer;
            Missed   : Long_Long_Integer := 0;
         begin
            Wait_Until (Deadline);
            At_Wake := Now;
            if At_Wake - Deadline > P then
               Missed := Long_Long_Integer'Min ((At_Wake - Deadline - 1) / P, N - K);
            end if;
            Sample (Deadline, At_Wake, Missed);
            Ideal := Deadline;
            K := K + 1 + Missed;
         end;
      end loop;
   end Measure;

   procedure Finish (Work : Long_Long_Integer) is
   begin
      Line ("R drift_ns=" & Img (Last - Ideal));
      Line ("E " & Img (Samples) & " " & Img (Work));
      Ada.Text_IO.Flush;
   end Finish;
end Rtlab_Report;
