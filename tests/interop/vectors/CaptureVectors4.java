/*
 * Golden vectors from the official Apache RocketMQ 4.9.8 classes, for the outputs that differ from 5.3.3:
 * route data (no enableActingMaster; fastjson 1.2.69) in both JSON forms, and JSON/ROCKETMQ headers
 * of a SEND_MESSAGE_V2 request and a send response (4.x header classes, V4_9_8 version).
 * Same fixed inputs as CaptureVectors.java; see tests/interop/vectors/README.md for the command.
 */
import java.io.File;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;

import com.alibaba.fastjson.serializer.SerializerFeature;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.header.*;
import org.apache.rocketmq.common.protocol.route.*;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

public class CaptureVectors4 {
    static final String VERSION = "4.9.8";
    static final String DATE = System.getProperty("capture.date", "unknown");
    static File outDir;

    static void write(String name, String method, String note, byte[] data) throws Exception {
        try (PrintWriter w = new PrintWriter(new File(outDir, name + ".hex"), "UTF-8")) {
            w.println("# provenance: apache/rocketmq " + VERSION + " " + method
                + ", captured by tests/interop/vectors/CaptureVectors4.java on " + DATE);
            for (String line : note.split("\n")) w.println("# " + line);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < data.length; i++) {
                sb.append(String.format("%02x", data[i] & 0xff));
                if (i % 32 == 31 || i == data.length - 1) { w.println(sb); sb.setLength(0); }
            }
        }
        System.out.println(name + " " + data.length);
    }

    static byte[] bytes(ByteBuffer b) { byte[] a = new byte[b.remaining()]; b.get(a); return a; }

    static RemotingCommand fix(RemotingCommand c, int opaque, SerializeType st) {
        c.setOpaque(opaque);
        c.setVersion(MQVersion.Version.V4_9_8.ordinal());
        c.setSerializeTypeCurrentRPC(st);
        return c;
    }

    public static void main(String[] args) throws Exception {
        outDir = new File(args[0]);
        outDir.mkdirs();

        SendMessageRequestHeader v1 = new SendMessageRequestHeader();
        v1.setProducerGroup("PG_golden"); v1.setTopic("GoldenTopic"); v1.setDefaultTopic("TBW102");
        v1.setDefaultTopicQueueNums(4); v1.setQueueId(2); v1.setSysFlag(0); v1.setBornTimestamp(1700000000000L);
        v1.setFlag(0); v1.setProperties("KEYS\u0001k1\u0002TAGS\u0001tagA\u0002UNIQ_KEY\u00017F00000100002A9F0000000000000001\u0002");
        v1.setReconsumeTimes(0); v1.setUnitMode(false); v1.setBatch(false);
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(v1);
        for (SerializeType st : SerializeType.values()) {
            RemotingCommand c = fix(RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, v2), 1001, st);
            c.setBody("hello golden".getBytes(StandardCharsets.UTF_8));
            write("v4_send_v2_request_" + st.name().toLowerCase(), "RemotingCommand.encode (" + st + ")",
                "as send_v2_request_* of 5.3.3 but 4.x SendMessageRequestHeaderV2 and version V4_9_8", bytes(c.encode()));
        }
        for (SerializeType st : SerializeType.values()) {
            RemotingCommand r = RemotingCommand.createResponseCommand(SendMessageResponseHeader.class);
            SendMessageResponseHeader rh = (SendMessageResponseHeader) r.readCustomHeader();
            rh.setMsgId("0A00000500002A9F0000000000001000"); rh.setQueueId(2); rh.setQueueOffset(77L);
            rh.setTransactionId("7F00000100002A9F0000000000000001");
            r.setCode(ResponseCode.SUCCESS); r.setRemark("send ok: \u00e9\u4e2d \"quoted\"");
            fix(r, 1001, st);
            write("v4_send_response_" + st.name().toLowerCase(), "RemotingCommand.encode (" + st + ")",
                "as send_response_* of 5.3.3, version V4_9_8", bytes(r.encode()));
        }

        TopicRouteData rd = new TopicRouteData();
        List<QueueData> qds = new ArrayList<>();
        QueueData qa = new QueueData(); qa.setBrokerName("broker-a"); qa.setReadQueueNums(4); qa.setWriteQueueNums(4); qa.setPerm(6); qa.setTopicSysFlag(0);
        QueueData qb = new QueueData(); qb.setBrokerName("broker-b"); qb.setReadQueueNums(8); qb.setWriteQueueNums(8); qb.setPerm(4); qb.setTopicSysFlag(1);
        qds.add(qa); qds.add(qb);
        rd.setQueueDatas(qds);
        List<BrokerData> bds = new ArrayList<>();
        HashMap<Long, String> addrsA = new HashMap<>(); addrsA.put(0L, "10.0.0.1:10911"); addrsA.put(1L, "10.0.0.2:10911");
        HashMap<Long, String> addrsB = new HashMap<>(); addrsB.put(0L, "[fe80::1:2]:10911");
        bds.add(new BrokerData("DefaultCluster", "broker-a", addrsA));
        bds.add(new BrokerData("DefaultCluster", "broker-b", addrsB));
        rd.setBrokerDatas(bds);
        rd.setFilterServerTable(new HashMap<>());
        write("v4_route_fastjson", "TopicRouteData.encode()",
            "4.x fastjson default form (bare Long keys, no enableActingMaster); same route as route_fastjson", rd.encode());
        write("v4_route_standard", "TopicRouteData.encode(BrowserCompatible, QuoteFieldNames, SkipTransientField, MapSortField)",
            "the form DefaultRequestProcessor.getRouteInfoByTopic (4.9.4+) returns to clients with version >= V4_9_4",
            rd.encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
                SerializerFeature.SkipTransientField, SerializerFeature.MapSortField));
    }
}
