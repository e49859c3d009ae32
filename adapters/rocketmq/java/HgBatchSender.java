package hourglass;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32;

import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;

/**
 * Hourglass's send loop, in Java so a batch costs one call from Python (JPype) instead of a
 * handful per message. Each message is sent once (the producer's own retries are off) and its
 * outcome is one tab-separated line: status, ts_ms (when send returned), born_ms, msg_id,
 * body_crc, broker, response code (a FAILED send: the code the broker answered, or the client's own
 * check; empty when there was none), error. status: SEND_OK; FAILED (certainly not stored); UNKNOWN (timed out or the
 * request may have reached the broker).
 */
public final class HgBatchSender {
    private static final String[] UNKNOWN_CAUSES = {
        "RemotingTimeoutException", "RemotingTooMuchRequestException", "RemotingSendRequestException"};

    private final DefaultMQProducer producer;
    private final ExecutorService pool;
    private final int threads;

    public HgBatchSender(DefaultMQProducer producer, int threads) {
        this.producer = producer;
        this.threads = threads;
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "hg-send");
            t.setDaemon(true);
            return t;
        });
    }

    public int threads() {
        return threads;
    }

    public void shutdown() {
        pool.shutdownNow();
    }

    /** bodies is every body concatenated; bodyLengths splits it. level 0 = not delayed;
     * timers[i] is the message's timer properties, NAME=value lines (empty: no timer; the values
     * as given, edges of a Java long included); an empty plan = no HG_PLAN property. */
    public String[] sendBatch(String[] topics, String[] keys, byte[] bodies, int[] bodyLengths, int[] levels,
                              String[] timers, String[] plans, long timeoutMs) throws Exception {
        int n = topics.length;
        Message[] msgs = new Message[n];
        long[] crcs = new long[n];
        int at = 0;
        for (int i = 0; i < n; i++) {
            byte[] body = new byte[bodyLengths[i]];
            System.arraycopy(bodies, at, body, 0, body.length);
            at += body.length;
            CRC32 crc = new CRC32();
            crc.update(body);
            crcs[i] = crc.getValue();
            Message m = new Message(topics[i], "", keys[i], body);
            if (levels[i] != 0) {
                m.setDelayTimeLevel(levels[i]);
            }
            if (timers[i] != null && !timers[i].isEmpty()) {
                for (String prop : timers[i].split("\n")) {
                    int eq = prop.indexOf('=');
                    MessageAccessor.putProperty(m, prop.substring(0, eq), prop.substring(eq + 1));
                }
            }
            if (plans[i] != null && !plans[i].isEmpty()) {
                m.putUserProperty("HG_PLAN", plans[i]);
            }
            m.putUserProperty("HG_BODY_CRC", Long.toString(crcs[i]));
            msgs[i] = m;
        }
        String[] out = new String[n];
        if (n == 1) {
            out[0] = sendOne(msgs[0], crcs[0], timeoutMs);
            return out;
        }
        List<Future<String>> futures = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            final Message m = msgs[i];
            final long crc = crcs[i];
            futures.add(pool.submit(() -> sendOne(m, crc, timeoutMs)));
        }
        for (int i = 0; i < n; i++) {
            out[i] = futures.get(i).get();
        }
        return out;
    }

    private String sendOne(Message m, long crc, long timeoutMs) {
        long born = System.currentTimeMillis();
        try {
            SendResult r = producer.send(m, timeoutMs);
            String status = r.getSendStatus().name();
            boolean ok = "SEND_OK".equals(status);
            String broker = r.getMessageQueue() == null ? "" : r.getMessageQueue().getBrokerName();
            String queueId = r.getMessageQueue() == null ? "" : Integer.toString(r.getMessageQueue().getQueueId());
            return line(ok ? "SEND_OK" : "UNKNOWN", System.currentTimeMillis(), born, r.getMsgId(), crc, broker, queueId, "",
                ok ? "" : "broker answered " + status);
        } catch (Throwable e) {
            long now = System.currentTimeMillis();
            return line(unknown(e) ? "UNKNOWN" : "FAILED", now, born, "", crc, "", "", responseCode(e),
                e.getClass().getName() + ": " + e.getMessage());
        }
    }

    private static boolean unknown(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            for (String name : UNKNOWN_CAUSES) {
                if (c.getClass().getSimpleName().equals(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The response code a refusal carried: the broker's answer, or the client's own check
     * (Validators.checkMessage throws MQClientException with ResponseCode.MESSAGE_ILLEGAL). */
    private static String responseCode(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof MQBrokerException) {
                return Integer.toString(((MQBrokerException) c).getResponseCode());
            }
            if (c instanceof MQClientException && ((MQClientException) c).getResponseCode() > 0) {
                return Integer.toString(((MQClientException) c).getResponseCode());
            }
        }
        return "";
    }

    private static String line(String status, long ts, long born, String msgId, long crc, String broker, String queueId,
                               String code, String error) {
        String err = error == null ? "" : error.replace('\t', ' ').replace('\n', ' ');
        return status + "\t" + ts + "\t" + born + "\t" + (msgId == null ? "" : msgId) + "\t" + crc + "\t"
            + (broker == null ? "" : broker) + "\t" + queueId + "\t" + code + "\t" + err;
    }
}
