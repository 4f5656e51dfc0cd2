package dev.hedgerow.function;

import dev.hedgerow.dispatch.DispatchObserver;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The observers' chain forwards every event of {@link DispatchObserver}: each is a default method, so one the chain
 * does not override is silently dropped for every observer behind it (a route's part of a resumed answer, added as
 * {@code routeUsage}, reached no usage window until the chain forwarded it).
 */
class ObserverChainTest {
    @Test
    void theChainForwardsEveryEvent() {
        Class<?> chain = CoreFactory.chain(DispatchObserver.NONE).getClass();
        List<String> dropped = new ArrayList<>();
        for (Method m : DispatchObserver.class.getDeclaredMethods()) {
            if (Modifier.isStatic(m.getModifiers()) || m.isSynthetic()) {
                continue;
            }
            try {
                chain.getDeclaredMethod(m.getName(), m.getParameterTypes());
            } catch (NoSuchMethodException e) {
                dropped.add(m.getName());
            }
        }
        assertEquals(List.of(), dropped);
    }
}
