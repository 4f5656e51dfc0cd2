package dev.hedgerow.function;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * Registers for reflection, in a native image, every type Jackson binds by reflection rather than through trees:
 * the simulator's configuration, scripts, faults and statistics (the demo fleet runs inside the app, and its control
 * endpoint reads and writes them). The gateway itself only uses Jackson trees. The list lives here, at the Quarkus
 * edge, so the sim package stays free of Quarkus types; {@code NativeReadinessTest} fails when a bound type is
 * missing.
 */
@RegisterForReflection(targets = {
        SimConfig.class,
        ModelScript.class, ModelScript.Latency.class, ModelScript.Capabilities.class, ModelScript.Reasoning.class,
        ModelScript.FaultChance.class, ModelScript.UsageMode.class, ModelScript.Continuation.class,
        ModelScript.EmbeddingsEncoding.class,
        Fault.class, Fault.HttpError.class, Fault.ResetBeforeHeaders.class, Fault.NoResponse.class, Fault.Drop.class,
        Fault.EmptyStream.class, Fault.LostContent.class, Fault.Refuse.class, Fault.IgnoreN.class, Fault.NoDone.class,
        Fault.HangAfterFinish.class, Fault.EofBeforeFinish.class, Fault.MalformedFrame.class, Fault.ErrorEvent.class, Fault.Stall.class, Fault.StallKeptAlive.class,
        Fault.DropDuringReasoning.class, Fault.Html200.class, Fault.HtmlError.class, Fault.GiantLine.class,
        Fault.Endless.class, Fault.SlowDrip.class, Fault.Gate.class,
        SimStats.class, SimStats.RecordedRequest.class, SimStats.Speed.class})
final class NativeReflection {
    private NativeReflection() {
    }
}
