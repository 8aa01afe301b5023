-- A small dump in the shape of InterCode's ic_spider_dbs.sql (mysqldump 8).
CREATE USER 'admin'@'%' IDENTIFIED BY 'admin';
GRANT ALL PRIVILEGES ON *.* TO 'admin'@'%';
FLUSH PRIVILEGES;

CREATE DATABASE  IF NOT EXISTS `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */ /*!80016 DEFAULT ENCRYPTION='N' */;
USE `shop`;
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;

--
-- Table structure for table `item`
--

DROP TABLE IF EXISTS `item`;
CREATE TABLE `item` (
  `id` int NOT NULL AUTO_INCREMENT,
  `name` text COLLATE utf8mb4_general_ci,
  `price` double DEFAULT NULL,
  `note` text COLLATE utf8mb4_general_ci,
  `shop_id` int DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `name_idx` (`name`(10)),
  CONSTRAINT `item_fk` FOREIGN KEY (`shop_id`) REFERENCES `store` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

LOCK TABLES `item` WRITE;
/*!40000 ALTER TABLE `item` DISABLE KEYS */;
INSERT INTO `item` VALUES (1,'Apple',1.5,'fresh\nred; crisp',1),(2,'banana',0.25,'it\'s yellow',1),(3,'Cherry',3,NULL,2),(4,'apple pie',4.75,'a \"very\" long note -- with dashes /* and a comment */ inside',2);
/*!40000 ALTER TABLE `item` ENABLE KEYS */;
UNLOCK TABLES;

DROP TABLE IF EXISTS `store`;
CREATE TABLE `store` (
  `id` int NOT NULL,
  `city` varchar(40) COLLATE utf8mb4_general_ci DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
LOCK TABLES `store` WRITE;
INSERT INTO `store` VALUES (1,'Oslo'),(2,'Bergen');
UNLOCK TABLES;

CREATE DATABASE  IF NOT EXISTS `school` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */;
USE `school`;
DROP TABLE IF EXISTS `student`;
CREATE TABLE `student` (
  `name` text COLLATE utf8mb4_general_ci,
  `grade` int DEFAULT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
LOCK TABLES `student` WRITE;
INSERT INTO `student` VALUES ('Ada',95),('Bo',90),('Cy',72),('Di',99),('Ed',90);
UNLOCK TABLES;
