import { MemoryStore } from "../../src/store/memory.js";
import { describeStore } from "./contract.js";

describeStore("memory", () => new MemoryStore());
